#!/usr/bin/env bash
# host_overhead.sh BUILD [OUT.md]: the host time shardrun's cuda backend
# spends on a step of GPT-2 small in bf16 (bench/gpt2's model), measured
# without a GPU on the pretend driver of tests/fakecuda (BUILD's
# tests/fakecuda/libcuda.so.1 and libcublasLt.so). That driver does no
# work: a launch, a matmul or a copy costs it next to nothing, so a step's
# time there is shardc's own host work per step (walking the plan,
# launching, copying, reading the loss), without the driver's and
# cuBLASLt's cost per call, which only a GPU measures. Prints the median
# and spread of steps 4 to 20, eagerly and by CUDA graphs (--graph), and
# the driver calls per step (tests/lit/fakecuda/steps.py), with OUT.md
# written too, naming the machine and the commit.
set -euo pipefail
build=$(cd "${1:?usage: host_overhead.sh BUILD [OUT.md]}" && pwd)
out=${2:-}
here=$(cd "$(dirname "$0")/.." && pwd)
fake=$build/tests/fakecuda
[ -e "$fake/libcuda.so.1" ] || { echo "host_overhead.sh: no $fake/libcuda.so.1 (a build with NVRTC builds it)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf -- "$tmp"' EXIT
export SHARDC_CACHE_DIR=${SHARDC_CACHE_DIR:-$tmp/nvrtc-cache}
sed 's/f32\[/bf16[/g' "$here/examples/transformer.sh" > "$tmp/bf16.sh"
gpt2=(-D B=8 -D S=1024 -D D=768 -D NH=12 -D V=50304 -D L=12 --mesh 1x1 --arch sm_90)
"$build/shardc" "$tmp/bf16.sh" "${gpt2[@]}" -o "$tmp/g.plan"
"$build/shardc" "$tmp/bf16.sh" "${gpt2[@]}" --emit schedule > "$tmp/g.sched"

steps() { # $@: shardrun flags; prints "median min max" ms of steps 4..20,
    # each from its samples a second (8 sequences a step; more digits
    # than its milliseconds)
    LD_LIBRARY_PATH=$fake "$build/shardrun" "$tmp/g.plan" --backend cuda --steps 20 "$@" |
        sed -n 's/^step \([0-9]*\)\/20 .* \([0-9]*\) samples\/s$/\1 \2/p' |
        awk '$1 >= 4 && $2 > 0 {printf "%.4f\n", 8000 / $2}' | sort -n |
        awk '{a[NR]=$1} END {printf "%.3f %.3f %.3f\n", (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2, a[1], a[NR]}'
}
read -r em emin emax < <(steps)
read -r gm gmin gmax < <(steps --graph)
counts() { # per step: the calls made, "name n, ..."
    awk '/^per step:/ && $4 != 0 {printf "%s %s, ", $3, $4}' "$1" | sed 's/, $//'
}
FAKECUDA=$fake SHARDRUN=$build/shardrun python3 "$here/tests/lit/fakecuda/steps.py" \
    --schedule "$tmp/g.sched" "$tmp/g.plan" > "$tmp/eager.calls"
FAKECUDA=$fake SHARDRUN=$build/shardrun python3 "$here/tests/lit/fakecuda/steps.py" \
    "$tmp/g.plan" --graph > "$tmp/graph.calls"
sched=$(sed -n 's/^schedule: //p' "$tmp/eager.calls")
ce=$(counts "$tmp/eager.calls")
cg=$(counts "$tmp/graph.calls")

report=$tmp/report.md
{
    echo "| run | host ms a step (median of steps 4-20) | fastest | slowest | driver calls a step |"
    echo "| --- | ---: | ---: | ---: | --- |"
    echo "| eager | $em | $emin | $emax | $ce |"
    echo "| --graph | $gm | $gmin | $gmax | $cg |"
    echo
    echo "The plan: $sched (\`--emit schedule\`), and an init kernel a step for each of its two inputs made from the seed."
} > "$report"
cat "$report"
if [ -n "$out" ]; then
    {
        echo "# shardc's host work per step, on a pretend driver"
        echo
        echo "bench/host_overhead.sh, $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$here" rev-parse --short HEAD)."
        echo "Machine: $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n 1), $(nproc) CPUs, no GPU:"
        echo "the driver and cuBLASLt are tests/fakecuda's, which do no work."
        echo
        cat "$report"
    } > "$out"
fi
