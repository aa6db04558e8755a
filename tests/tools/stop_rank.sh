#!/usr/bin/env bash
# stop_rank.sh RANK SECONDS DIR CMD...: a rank that stops (SIGSTOP: hung,
# or stopped by hand) must not hang its MPI job. Runs CMD, an MPI job whose
# rank R writes its process id into DIR/pid.R as it starts and which prints
# "step N/M" lines (tests/lit/run/rank-stopped-mpi.sh), in the background;
# once it has printed step 2, stops rank RANK; then waits up to SECONDS for
# the job to end.
#
# Prints the job's output (its first two step lines, then every other
# line), then "stop_rank: the job ended with exit status N"; succeeds when
# the job ended with a non-zero status within SECONDS and no rank's process
# is left. Otherwise it says why and fails. Whatever happens, every rank
# and the job are killed at the end (SIGCONT, then SIGKILL), so the test
# leaves no process behind.
set -u
if [ $# -lt 4 ]; then
    echo "usage: stop_rank.sh RANK SECONDS DIR CMD..." >&2
    exit 2
fi
rank=$1 limit=$2 dir=$3
shift 3
mkdir -p "$dir" || exit 1
out=$dir/out
"$@" > "$out" 2>&1 &
job=$!

# every rank whose pid file is there, and the job, stopped or not
cleanup() {
    for f in "$dir"/pid.*; do
        [ -f "$f" ] || continue
        kill -CONT "$(cat "$f")" 2>/dev/null
        kill -KILL "$(cat "$f")" 2>/dev/null
    done
    kill -CONT "$job" 2>/dev/null
    kill -KILL "$job" 2>/dev/null
}
trap cleanup EXIT

show() {
    awk '!/^step [0-9]/ || ++n <= 2' "$out"
}

# seconds since $1 (bash's $EPOCHREALTIME), in tenths
since() {
    local now=$EPOCHREALTIME
    echo $(( (${now/./} - ${1/./}) / 100000 ))
}

start=$EPOCHREALTIME
until grep -q '^step 2/' "$out"; do
    if ! kill -0 "$job" 2>/dev/null; then
        show
        echo "stop_rank: the job ended before step 2"
        exit 1
    fi
    if [ "$(since "$start")" -gt 600 ]; then
        show
        echo "stop_rank: no step 2 after 60 s"
        exit 1
    fi
    sleep 0.05
done
victim=$(cat "$dir/pid.$rank") || exit 1
kill -STOP "$victim" || exit 1
stopped=$EPOCHREALTIME
while kill -0 "$job" 2>/dev/null; do
    if [ "$(since "$stopped")" -gt $((limit * 10)) ]; then
        show
        echo "stop_rank: the job still runs $limit s after rank $rank stopped"
        exit 1
    fi
    sleep 0.1
done
wait "$job"
status=$?
show
echo "stop_rank: the job ended with exit status $status"
# the launcher ends every rank as the job ends; give it a moment
for f in "$dir"/pid.*; do
    pid=$(cat "$f")
    for _ in $(seq 50); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        echo "stop_rank: ${f##*/pid.}'s process $pid outlived the job"
        exit 1
    fi
done
[ "$status" -ne 0 ]
