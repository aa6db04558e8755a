#!/usr/bin/env bash
# run_model.sh MODEL MESH COMM DATA: the semantic test of one model on one
# mesh (DESIGN.md §7). Compiles MODEL for MESH, runs it with shardrun over
# COMM (local: threads; mpi: mpirun, one process per rank) on the params and
# inputs in DATA (made by tests/oracle/oracle.py), and compares its outputs
#   1. with the unsharded run (every axis of size 1) of the same model and
#      data: tolerance rtol 1e-4, atol 1e-5 (f32 sums in another order);
#   2. with PyTorch's outputs, DATA/expected.safetensors: rtol 2e-4, atol
#      1e-4 (PyTorch computes in f64, shardrun in f32).
# A mismatch prints the tensor and its max absolute and relative error.
# Tools come from the environment: SHARDC, SHARDRUN, ST_COMPARE, MPIRUN
# (with MPIRUN_FLAGS).
set -euo pipefail
if [ $# -lt 4 ]; then
    echo "usage: run_model.sh MODEL MESH COMM DATA" >&2
    exit 2
fi
model=$1 mesh=$2 comm=$3 data=$4
tmp=$(mktemp -d)
trap 'rm -rf -- "$tmp"' EXIT

# the unsharded mesh: as many axes as MESH, each of size 1
ones=$(echo "$mesh" | sed 's/[0-9][0-9]*/1/g')
ranks=$(( $(echo "$mesh" | sed 's/x/*/g') ))
data_args=(--params "$data/params.safetensors" --inputs "$data/inputs.safetensors")

"$SHARDC" "$model" --mesh "$ones" -o "$tmp/ref.plan"
"$SHARDRUN" "$tmp/ref.plan" --comm local --quiet "${data_args[@]}" --outputs "$tmp/ref.safetensors"

"$SHARDC" "$model" --mesh "$mesh" -o "$tmp/model.plan"
if [ "$comm" = mpi ]; then
    # shellcheck disable=SC2086
    "$MPIRUN" $MPIRUN_FLAGS -np "$ranks" "$SHARDRUN" "$tmp/model.plan" --comm mpi --quiet \
        "${data_args[@]}" --outputs "$tmp/got.safetensors"
else
    "$SHARDRUN" "$tmp/model.plan" --comm local --ranks "$ranks" --quiet "${data_args[@]}" \
        --outputs "$tmp/got.safetensors"
fi

echo "== $model --mesh $mesh ($comm) against the unsharded run"
"$ST_COMPARE" "$tmp/ref.safetensors" "$tmp/got.safetensors" --rtol 1e-4 --atol 1e-5
echo "== $model --mesh $mesh ($comm) against PyTorch"
"$ST_COMPARE" "$data/expected.safetensors" "$tmp/got.safetensors" --rtol 2e-4 --atol 1e-4
