#!/usr/bin/env bash
# run_resume.sh [--momentum M] [-D NAME=VALUE]... MODEL SAVE_MESH RESUME_MESH COMM INPUT...:
# a training run
# saved at step 3 on one mesh and resumed on another reaches the same
# params and optimizer states at step 5 as an uninterrupted run (the
# "training loop" item of issue 6). INPUT: the model's inputs, as
# tests/tools/make_batches.py takes them (x=F32[64,1024], ids=I32[8,128]<1024).
# With --momentum M, a copy of MODEL whose sgd(...) gets momentum = M, so
# there is an optimizer state to carry over. -D defines go to shardc.
#
#   1. make_batches.py: 5 different batches of every input, one per step;
#   2. the uninterrupted run: 5 steps on SAVE_MESH (local);
#   3. 3 steps on SAVE_MESH with --save, then --resume on RESUME_MESH for 2
#      steps (both over COMM: local threads, or mpirun), which must run
#      steps 4 and 5 on batches 4 and 5;
#   4. --resume on SAVE_MESH itself (local): the same arithmetic as the
#      uninterrupted run, so its params and states must be identical to
#      the byte, and its losses too.
# Params come from the seed. Compared with the uninterrupted run:
#   - the losses of steps 4 and 5, and the params and states after step 5.
#     Tolerances are tests/run_train.py's against the unsharded run, for
#     the same reason: on RESUME_MESH the same steps sum in another order
#     (a reduction split over other ranks), a rounding difference that the
#     optimizer then carries. Measured here (2x2 to 4x1, 1x2): sgd, mlp.sh
#     params 3.7e-9 abs (atol 1.5e-7); adamw, transformer.sh params 2.6e-5
#     (atol 5e-4), m 2.5e-8 (1e-6), v 1.2e-10 (3e-8); losses equal to the
#     6 printed decimals.
# A missing checkpoint, a wrong step count or batch, or a param resumed
# from the wrong shard fails by orders of magnitude (a batch differs by
# 1e-2 in the loss).
# Tools come from the environment: SHARDC, SHARDRUN, ST_COMPARE, MPIRUN
# (with MPIRUN_FLAGS), python3.
set -euo pipefail
momentum=""
defines=()
while [ $# -gt 0 ]; do
    case $1 in
    --momentum) momentum=$2 && shift 2 ;;
    -D) defines+=(-D "$2") && shift 2 ;;
    *) break ;;
    esac
done
if [ $# -lt 5 ]; then
    echo "usage: run_resume.sh [--momentum M] [-D NAME=VALUE]... MODEL SAVE_MESH RESUME_MESH" \
        "COMM INPUT..." >&2
    exit 2
fi
model=$1 save_mesh=$2 resume_mesh=$3 comm=$4
shift 4
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf -- "$tmp"' EXIT

if [ -n "$momentum" ]; then
    copy=$tmp/$(basename "$model")
    sed "s/^\(train .* sgd(.*\))/\1, momentum = $momentum)/" "$model" > "$copy"
    model=$copy
    grep "^train " "$model"
fi

param_rtol=1e-5
if grep -q '^ *param .*: *bf16\[' "$model"; then
    # bf16 params with f32 masters (tests/models/mlp_bf16.sh; the masters in
    # opt), measured 2x2 to 4x1: masters 3.5e-6 abs, params 1.2e-4 (one bf16
    # ulp where a master straddles a rounding boundary: rtol 2^-7), m 2.2e-6,
    # v 6.3e-9, losses 3e-6 rel
    loss_rtol=5e-5 param_atol=5e-5 param_rtol=7.9e-3 m_atol=3e-5 v_atol=1e-7 opt_atol=5e-5
elif grep -q '^train .* adamw(' "$model"; then
    loss_rtol=1e-6 param_atol=5e-4 m_atol=1e-6 v_atol=3e-8 opt_atol=0
elif grep -q '^train .* sgd(' "$model"; then
    loss_rtol=5e-6 param_atol=1.5e-7 m_atol=0 v_atol=0 opt_atol=5e-9
else
    echo "run_resume.sh: $model: no tolerances measured for its optimizer" >&2
    exit 2
fi
rtol=1e-5

python3 "$here/tools/make_batches.py" "$tmp/in.safetensors" 5 "$@"
"$SHARDC" "$model" "${defines[@]}" --mesh "$save_mesh" -o "$tmp/save.plan"
"$SHARDC" "$model" "${defines[@]}" --mesh "$resume_mesh" -o "$tmp/resume.plan"
inputs=(--inputs "$tmp/in.safetensors")

# shardrun_on PLAN MESH ARGS...: over COMM
shardrun_on() {
    local plan=$1 mesh=$2
    shift 2
    if [ "$comm" = mpi ]; then
        # shellcheck disable=SC2086
        "$MPIRUN" $MPIRUN_FLAGS -np $(( ${mesh//x/*} )) "$SHARDRUN" "$plan" --comm mpi "$@"
    else
        "$SHARDRUN" "$plan" --comm local "$@"
    fi
}

# losses LOG: "STEP LOSS" for each step line of LOG
losses() {
    awk '$1 == "step" { for (i = 2; i < NF; i++) if ($i == "loss") print $2, $(i + 1) }' "$1"
}

"$SHARDRUN" "$tmp/save.plan" --comm local --steps 5 "${inputs[@]}" \
    --save-params "$tmp/full.safetensors" | tee "$tmp/full.log"
shardrun_on "$tmp/save.plan" "$save_mesh" --steps 3 "${inputs[@]}" --save "$tmp/ckpt" \
    | tee "$tmp/first.log"
shardrun_on "$tmp/resume.plan" "$resume_mesh" --resume "$tmp/ckpt" --steps 2 "${inputs[@]}" \
    --save-params "$tmp/got.safetensors" | tee "$tmp/got.log"
"$SHARDRUN" "$tmp/save.plan" --comm local --resume "$tmp/ckpt" --steps 2 "${inputs[@]}" \
    --save-params "$tmp/same.safetensors" > "$tmp/same.log"

rc=0
what="$(basename "$model") saved on $save_mesh, resumed on $resume_mesh ($comm)"
if ! grep -q "^checkpoint saved to .*/ckpt (step 3)$" "$tmp/first.log" ||
   ! grep -q "^resumed from .*/ckpt/step-00000003 at step 3$" "$tmp/got.log"; then
    echo "== $what: no 'checkpoint saved ... (step 3)' or 'resumed from ... at step 3' line"
    rc=1
fi

echo "== $what: losses of steps 4/5 and 5/5 against the uninterrupted run"
losses "$tmp/full.log" | awk '$1 == "4/5" || $1 == "5/5"' > "$tmp/full.loss"
losses "$tmp/got.log" > "$tmp/got.loss"
losses "$tmp/same.log" > "$tmp/same.loss"
paste "$tmp/full.loss" "$tmp/got.loss" | awk -v rtol="$loss_rtol" '
    function abs(v) { return v < 0 ? -v : v }
    {
        d = abs($4 - $2)
        ok = $1 == $3 && d <= rtol * abs($2)
        printf "  step %s: expected %s, got step %s loss %s: rel err %.3g: %s\n", \
            $1, $2, $3, $4, d / abs($2), ok ? "ok" : "MISMATCH"
        bad += !ok
    }
    END { if (NR != 2) { print "  expected 2 steps, got " NR; bad++ } exit bad ? 1 : 0 }' || rc=1
if ! cmp -s "$tmp/full.loss" "$tmp/same.loss"; then
    echo "== $what: resumed on $save_mesh itself, the losses differ:"
    paste "$tmp/full.loss" "$tmp/same.loss"
    rc=1
fi

# the params and states, each group with its tolerance: AdamW's m and v,
# the other states (opt.step: an exact count), the params
python3 - "$tmp/full.safetensors" "$tmp" <<'EOF'
import json, re, struct, sys
blob = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", blob[:8])[0]
header = json.loads(blob[8:8 + n])
header.pop("__metadata__", None)
groups = {}
for name, t in sorted(header.items()):
    group = ("m" if re.fullmatch(r"opt\..*\.m", name) else "v" if re.fullmatch(r"opt\..*\.v", name)
             else "opt" if name.startswith("opt.") else "params")
    groups.setdefault(group, []).append((name, t))
for group, tensors in groups.items():
    head, data = {}, b""
    for name, t in tensors:
        b, e = t["data_offsets"]
        head[name] = {"dtype": t["dtype"], "shape": t["shape"],
                      "data_offsets": [len(data), len(data) + e - b]}
        data += blob[8 + n + b:8 + n + e]
    text = json.dumps(head).encode()
    text += b" " * (-len(text) % 8)
    with open(f"{sys.argv[2]}/full-{group}.safetensors", "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)
EOF
for group in params:$param_atol m:$m_atol v:$v_atol opt:$opt_atol; do
    name=${group%%:*} atol=${group#*:} r=$rtol
    [ "$name" = params ] && r=$param_rtol
    [ -e "$tmp/full-$name.safetensors" ] || continue
    echo "== $what: $name against the uninterrupted run"
    "$ST_COMPARE" "$tmp/full-$name.safetensors" "$tmp/got.safetensors" --rtol "$r" \
        --atol "$atol" || rc=1
done
echo "== $what: resumed on $save_mesh itself: the same bytes as the uninterrupted run"
cmp "$tmp/full.safetensors" "$tmp/same.safetensors" || rc=1
exit $rc
