#!/usr/bin/env bash
# kill_saves.sh SHARDRUN PLAN DIR TRIES: kill -9 during checkpoint saves,
# TRIES times, and each time the folder must still resume (the issue 16
# bug: a save removed the old index before writing the new checkpoint, so
# a kill inside it left none).
#
# Each try runs PLAN with --save DIR --save-every 1 (resumed from DIR after
# the first), waits until one of its saves has completed, then kills it
# 0-99 ms later: saves (each fsyncs every file) take most of a step's
# time, so most kills land inside one. Then `--resume DIR` must work and
# start at a step S with P <= S <= R, where P is the last save the killed
# run reported complete and R the last step it reported run (a save of
# step k begins after step k's line), with no note (the pointer never
# names an incomplete folder), and DIR may hold at most 3 complete step
# folders (the 2 kept, and a new one whose pointer the kill beat to the
# pruning). At the end, one step resumed from DIR must give the params of
# an uninterrupted run of S + 1 steps, byte for byte.
#
# Prints one line a try and a summary; exits 1 at the first failure.
set -uo pipefail
if [ $# -ne 4 ]; then
    echo "usage: kill_saves.sh SHARDRUN PLAN DIR TRIES" >&2
    exit 2
fi
shardrun=$1 plan=$2 dir=$3 tries=$4
log=$dir.log
last=0 # the step DIR resumes at; 0 before the first save

shopt -s nullglob

fail() {
    echo "try $t: $*"
    echo "--- the killed run's output ---"
    cat "$log"
    exit 1
}

for ((t = 1; t <= tries; t++)); do
    resume=()
    [ "$last" -gt 0 ] && resume=(--resume "$dir")
    : > "$log"
    "$shardrun" "$plan" "${resume[@]}" --steps 1000000 --save-every 1 --save "$dir" \
        > "$log" 2>&1 &
    pid=$!
    for ((i = 0; i < 1000; i++)); do # a save of this run is complete (10 s at most)
        grep -q "^checkpoint saved" "$log" && break
        kill -0 "$pid" 2> /dev/null || fail "the run ended before saving"
        sleep 0.01
    done
    sleep "0.$(printf %03d $((RANDOM % 100)))"
    kill -9 "$pid" 2> /dev/null || fail "the run ended before the kill"
    wait "$pid" 2> /dev/null
    # the last save reported complete, the last step reported run
    read -r saved ran < <(awk '/^checkpoint saved to .* \(step [0-9]+\)$/ { s = $NF + 0 }
                               /^step [0-9]+\// { split($2, a, "/"); r = a[1] }
                               END { print s + 0, r + 0 }' "$log")
    [ "$saved" -gt 0 ] && [ "$ran" -gt 0 ] || fail "no save or no step reported"
    out=$("$shardrun" "$plan" --resume "$dir" --steps 1 2>&1) ||
        fail "--resume $dir failed after the kill: $out"
    at=$(sed -n 's/^resumed from .* at step \([0-9]*\)$/\1/p' <<< "$out")
    [ -n "$at" ] && [ "$at" -ge "$saved" ] && [ "$at" -le "$ran" ] && [ "$at" -gt "$last" ] ||
        fail "resumed at step '$at', expected $saved to $ran (saved, run) and past $last: $out"
    grep -q "note:" <<< "$out" && fail "a note on resuming: $out"
    partial=("$dir"/step-*.partial)
    done=("$dir"/step-*[0-9])
    [ ${#done[@]} -le 3 ] || fail "${#done[@]} complete step folders: ${done[*]}"
    echo "try $t: killed after step $ran (saved $saved, a save in progress: ${#partial[@]}): resumed at step $at"
    last=$at
done

# the checkpoint holds step $last's values: one more step from it equals an
# uninterrupted run of $last + 1 steps
"$shardrun" "$plan" --resume "$dir" --steps 1 --quiet --save-params "$dir.resumed.st" ||
    fail "the last resume failed"
"$shardrun" "$plan" --steps $((last + 1)) --quiet --save-params "$dir.straight.st" ||
    fail "the uninterrupted run failed"
cmp "$dir.resumed.st" "$dir.straight.st" ||
    fail "resumed at step $last, one step does not give the params of $((last + 1)) straight"
echo "$tries kills: each left a checkpoint that resumes at a completed save's step"
