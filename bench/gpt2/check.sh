#!/usr/bin/env bash
# check.sh [BUILD]: what of bench/gpt2 can be checked without a GPU, on any
# machine: run.sh's path without a GPU (exit 77, with a stand-in
# nvidia-smi that finds none), trace_table.py on a hand-written CUDA trace
# (testdata/trace-cuda.json, in the format of runtime/exec/trace.c;
# expected tables in testdata/trace-cuda.md) and on a CPU trace made here,
# report.py's first-step table and its estimate against the run on made-up
# log folders, the bf16 model
# (every f32[ made bf16[) compiling and holding GPT-2
# small's params in bf16, and, where PYTHON (default python3) has torch,
# check_same_model.py and gpt2_torch.py's own no-GPU exit. Prints each
# check and "ok"; exit 1 when one fails.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "${1:-build}" && pwd) || exit 2
python=${PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf -- "$tmp"' EXIT
small=(-D B=2 -D S=16 -D D=32 -D NH=4 -D V=64 -D L=2)
gpt2=(-D B=8 -D S=1024 -D D=768 -D NH=12 -D V=50304 -D L=12)
failed=0
fail() { echo "FAILED: $*" && failed=1; }

# run.sh, no GPU: one line, exit 77, before anything else
mkdir "$tmp/bin" && printf '#!/bin/sh\nexit 9\n' >"$tmp/bin/nvidia-smi" &&
    chmod +x "$tmp/bin/nvidia-smi"
out=$(PATH="$tmp/bin:$PATH" "$here/run.sh" /nonexistent 2>&1)
rc=$?
echo "run.sh without a GPU: exit $rc: $out"
if [ "$rc" != 77 ] || [ "$out" != "skipped: no GPU (nvidia-smi lists none)" ]; then
    fail "run.sh without a GPU"
fi
"$here/run.sh" --steps 0 >/dev/null 2>&1
[ $? = 2 ] || fail "run.sh --steps 0: expected exit 2"

# the trace tables
if "$python" "$here/trace_table.py" "$here/testdata/trace-cuda.json" --title fixture \
    | diff -u "$here/testdata/trace-cuda.md" - >"$tmp/diff"; then
    echo "trace_table.py on the CUDA fixture: as expected"
else
    cat "$tmp/diff" && fail "trace_table.py on the CUDA fixture"
fi
"$build/shardc" "$root/examples/transformer.sh" "${small[@]}" --mesh 1x1 --arch none \
    -o "$tmp/f32.plan" &&
    "$build/shardrun" "$tmp/f32.plan" --steps 3 --trace "$tmp/cpu.json" --quiet &&
    "$python" "$here/trace_table.py" "$tmp/cpu.json" >"$tmp/cpu.md" &&
    grep -q '^| `matmul` | matmul | compute | ' "$tmp/cpu.md" &&
    grep -q '^| adamw | ' "$tmp/cpu.md" &&
    echo "trace_table.py on a CPU trace: $(head -n 1 "$tmp/cpu.md")" ||
    fail "trace_table.py on a CPU trace"

# report.py's start-and-first-step table on a made-up log folder: bf16's
# one-step run within both goals of issue 20, f32's failed
mkdir "$tmp/log" && (
    cd "$tmp/log" &&
        printf 'gpu=fixture\nwarmup=3\nsteps=5\ndefines=-D B=8 -D S=1024\n' >meta.env &&
        printf 'step 1/1  loss 10.99  950.5 ms  8619 tokens/s\n' >first-bf16.log &&
        echo 0 >first-bf16.rc && echo 2.345 >first-bf16.wall && echo 3.210 >compile-bf16.wall &&
        echo 'shardrun: error: out of memory' >first-f32.log && echo 1 >first-f32.rc &&
        echo 0.500 >first-f32.wall
)
"$python" "$here/report.py" "$tmp/log" >"$tmp/report.md"
if grep -qx '| shardc bf16 | 3.21 s | 2.35 s | 950.5 ms | yes | yes |' "$tmp/report.md" &&
    grep -qx '| shardc f32 | ? | 0.50 s | failed |  |  |' "$tmp/report.md" &&
    grep -q '^## Start and the first step' "$tmp/report.md"; then
    echo "report.py's first-step table on the fixture: as expected"
else
    grep -A 6 'first step' "$tmp/report.md"
    fail "report.py's first-step table"
fi

# report.py's estimate against the run on a made-up log folder: bf16's
# estimate 9.1% under its median step (within 10%), f32's 19.1% (not),
# and per kind the estimate's timeline (shardc --trace, here at small
# sizes) against a run's trace (the CPU trace above)
mkdir "$tmp/elog" && (
    cd "$tmp/elog" &&
        printf 'gpu=fixture\nwarmup=3\nsteps=5\nhw=h200\ndefines=-D B=8 -D S=1024\n' >meta.env &&
        echo '{"estimate": {"hardware": "h200", "step_ms": 50.0}}' >report-bf16.json &&
        echo '{"estimate": {"hardware": "h200", "step_ms": 180.0}}' >report-f32.json &&
        for t in 90 60 60 60 54 56 55 57 53; do echo "$t"; done |
        awk '{ printf "step %d/9  loss 10.5  %s ms  1000 tokens/s\n", NR, $1 }' >shardc-bf16.log &&
        for t in 400 230 230 230 222.6 222.6 222.6 222.6 222.6; do echo "$t"; done |
        awk '{ printf "step %d/9  loss 10.5  %s ms  1000 tokens/s\n", NR, $1 }' >shardc-f32.log &&
        echo 0 >shardc-bf16.rc && echo 0 >shardc-f32.rc && echo 0 >trace-bf16.rc &&
        cp "$tmp/cpu.json" trace-bf16.json
) && "$build/shardc" "$root/examples/transformer.sh" "${small[@]}" --mesh 1x1 --hw h200 \
    --trace "$tmp/elog/estimate-bf16.json" >/dev/null
"$python" "$here/report.py" "$tmp/elog" >"$tmp/ereport.md"
if grep -qx '| shardc f32 | h200 | 180.0 ms | 222.6 ms | -19.1% | no |' "$tmp/ereport.md" &&
    grep -qx '| shardc bf16 | h200 | 50.0 ms | 55.0 ms | -9.1% | yes |' "$tmp/ereport.md" &&
    grep -q '^## The estimate against the run' "$tmp/ereport.md" &&
    grep -q "^shardc bf16, per step: the estimate's timed work" "$tmp/ereport.md" &&
    grep -qE '^\| matmul \| [0-9]+ \| [0-9.]+ \| [0-9]+ \| [0-9.]+ \| [0-9.]+ \|$' "$tmp/ereport.md"; then
    echo "report.py's estimate against the run on the fixture: as expected"
else
    grep -A 20 'estimate against' "$tmp/ereport.md"
    fail "report.py's estimate against the run"
fi

# the bf16 model, as run.sh makes it
sed 's/f32\[/bf16[/g' "$root/examples/transformer.sh" >"$tmp/bf16.sh"
grep -q 'f32\[' "$tmp/bf16.sh" && fail "an f32[ left in the bf16 model"
"$build/shardc" "$tmp/bf16.sh" "${small[@]}" --mesh 1x1 --arch none -o "$tmp/bf16.plan" &&
    "$build/shardrun" "$tmp/bf16.plan" --steps 2 --quiet || fail "the bf16 model at small sizes"
bytes=$("$build/shardc" "$tmp/bf16.sh" "${gpt2[@]}" --mesh 1x1 --report json |
    "$python" -c 'import json, sys; print(json.load(sys.stdin)["stages"][0]["memory"]["params"])')
echo "bf16 model at GPT-2 small's sizes: $bytes bytes of params"
[ "$bytes" = $((2 * 163072512)) ] ||
    fail "the bf16 model's params: $bytes bytes, expected 2 x 163072512"

# the PyTorch side
"$python" "$here/check_same_model.py" "$build"
case $? in
0) ;;
77) echo "(check_same_model.py skipped: no torch in $python; PYTHON names another)" ;;
*) fail "check_same_model.py" ;;
esac
out=$("$python" "$here/gpt2_torch.py" --tiny --modes eager-f32 --warmup 1 --steps 1 2>&1)
rc=$?
echo "gpt2_torch.py: exit $rc: $out"
case $rc in
77) [ "${out#skipped: no GPU}" != "$out" ] || fail "gpt2_torch.py without a GPU: $out" ;;
1) [ "${out#*cannot import torch}" != "$out" ] || fail "gpt2_torch.py: $out" ;;
0) echo "(a GPU is here: gpt2_torch.py ran)" ;;
*) fail "gpt2_torch.py: exit $rc" ;;
esac

[ "$failed" = 0 ] && echo ok
exit "$failed"
