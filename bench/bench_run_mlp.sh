#!/usr/bin/env bash
# bench_run_mlp.sh [BUILD]: issue 4's goal: compiling examples/mlp.sh and
# running it on 8 MPI ranks (mesh 4x2, weights and inputs from the seed)
# takes under 3 seconds on a 2-core machine. Times the whole command, as a
# user types it, REPEAT times (default 5) and prints each and the median;
# also the same with the 8 ranks as threads of one process.
set -euo pipefail
build=${1:-build}
repeat=${REPEAT:-5}
tmp=$(mktemp -d)
trap 'rm -rf -- "$tmp"' EXIT
mpirun=(mpirun --allow-run-as-root --oversubscribe --mca btl self,vader)

now() { date +%s.%N; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

run_mpi() {
    "$build/shardc" examples/mlp.sh --mesh 4x2 -o "$tmp/mlp.plan" &&
        "${mpirun[@]}" -np 8 "$build/shardrun" "$tmp/mlp.plan" --quiet
}
run_local() {
    "$build/shardc" examples/mlp.sh --mesh 4x2 -o "$tmp/mlp.plan" &&
        "$build/shardrun" "$tmp/mlp.plan" --quiet
}

for what in run_mpi run_local; do
    times=()
    $what # warm-up: page cache, MPI's first start
    for _ in $(seq "$repeat"); do
        t0=$(now)
        $what
        t1=$(now)
        times+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}')")
    done
    printf '%s: %s s; median %.3f s\n' "$what" "$(printf '%.3f ' "${times[@]}")" \
        "$(printf '%s\n' "${times[@]}" | median)"
done
