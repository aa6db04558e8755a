#!/usr/bin/env bash
# tests/gpu/run.sh [BUILD]: the CUDA backend against the CPU backend, on a
# machine with a GPU (no ctest needs one: DESIGN.md §7). Every example
# (examples/*.sh) on the meshes 1, 2 and 2x2 (1s added for the axes the
# example has beyond them: 2x2 is 2x2x1 for dp, tp, pp) is compiled once,
# with its kernels (--arch sm_80,sm_90, or $GPU_ARCH), then run for 2 steps
# from the same seed with --comm local on each backend (every rank a thread;
# all of them on the one GPU); the outputs of the last step and the params
# and states after it must agree: |cuda - cpu| <= 2e-4 + 2e-3 |cpu| per
# element (f32 on both, but sums, dot products and softmax in other orders,
# expf and matmuls the GPU's own; st_compare prints the worst error).
#
# Then the same plans of mesh 1 (and 2 with two GPUs) with --comm nccl
# under mpirun, one process per GPU, against the CPU runs.
#
# Without a GPU (shardrun --backend cuda exits 4) it prints "skipped: no
# GPU" and exits 77. BUILD is the build folder (default build/).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd) || exit 2
shardc=$build/shardc shardrun=$build/shardrun compare=$build/tests/st_compare
for tool in "$shardc" "$shardrun" "$compare"; do
    [ -x "$tool" ] || { echo "run.sh: $tool is not built (cmake --build $build)" >&2; exit 2; }
done
export SHARDC_CACHE_DIR=${SHARDC_CACHE_DIR:-$build/nvrtc-cache}
unset SHARDC_ARCH

why=$("$shardrun" /nonexistent.plan --backend cuda 2>&1)
if [ $? -eq 4 ]; then
    echo "skipped: no GPU (${why#shardrun: error: })"
    exit 77
fi

tmp=$(mktemp -d)
trap 'rm -rf -- "$tmp"' EXIT
pass=0 fail=0
failed=()

# MESH (1, 2, 2x2) for an example with N axes: 1s added to N sizes.
mesh_for() {
    local mesh=$1 n=$2 have
    have=$(echo "$mesh" | tr 'x' '\n' | wc -l)
    for ((i = have; i < n; i++)); do mesh+=x1; done
    echo "$mesh"
}

# One run of PLAN on BACKEND into DIR/BACKEND.*.safetensors.
run() {
    local plan=$1 backend=$2 dir=$3
    "$shardrun" "$plan" --backend "$backend" --comm local --seed 7 --steps 2 --quiet \
        --outputs "$dir/$backend.out.safetensors" --save-params "$dir/$backend.params.safetensors"
}

for model in "$root"/examples/*.sh; do
    name=$(basename "$model" .sh)
    # the mesh line of the logical IR: "mesh dp = 1, tp = 1"
    axes=$("$shardc" "$model" --emit ir | head -1 | tr ',' '\n' | wc -l)
    for m in 1 2 2x2; do
        mesh=$(mesh_for "$m" "$axes")
        dir=$tmp/$name-$mesh
        mkdir -p "$dir"
        echo "== $name --mesh $mesh"
        ok=true
        "$shardc" "$model" --mesh "$mesh" --arch "${GPU_ARCH:-sm_80,sm_90}" -o "$dir/plan" &&
            run "$dir/plan" cpu "$dir" && run "$dir/plan" cuda "$dir" || ok=false
        $ok && echo "outputs:" && "$compare" "$dir/cpu.out.safetensors" \
            "$dir/cuda.out.safetensors" --rtol 2e-3 --atol 2e-4 || ok=false
        $ok && echo "params and states after 2 steps:" && "$compare" \
            "$dir/cpu.params.safetensors" "$dir/cuda.params.safetensors" --rtol 2e-3 \
            --atol 2e-4 || ok=false
        if $ok; then
            pass=$((pass + 1))
        else
            fail=$((fail + 1))
            failed+=("$name --mesh $mesh")
        fi
    done
done
# NCCL (--comm nccl): one process per GPU under mpirun, so a mesh of as
# many ranks as GPUs (NCCL refuses two ranks on one GPU): mesh 1 always,
# and 2 where the machine has two GPUs or more; the outputs and params of
# the CPU runs above are the reference, with the same tolerance.
mpirun=${MPIRUN:-$(command -v mpirun || true)}
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
run_nccl() {
    local plan=$1 dir=$2 np=$3
    "$mpirun" --allow-run-as-root --oversubscribe -np "$np" "$shardrun" "$plan" --backend cuda \
        --comm nccl --timeout 120 --seed 7 --steps 2 --quiet \
        --outputs "$dir/nccl.out.safetensors" --save-params "$dir/nccl.params.safetensors"
}
if [ -z "$mpirun" ]; then
    echo "== nccl: skipped: no mpirun"
else
    for model in "$root"/examples/*.sh; do
        name=$(basename "$model" .sh)
        axes=$("$shardc" "$model" --emit ir | head -1 | tr ',' '\n' | wc -l)
        for m in 1 2; do
            [ "$m" -le "${ngpu:-1}" ] || [ "$m" -eq 1 ] || continue
            mesh=$(mesh_for "$m" "$axes")
            dir=$tmp/$name-$mesh
            [ -f "$dir/cpu.out.safetensors" ] || continue
            echo "== $name --mesh $mesh --comm nccl (mpirun -np $m)"
            ok=true
            run_nccl "$dir/plan" "$dir" "$m" || ok=false
            $ok && echo "outputs:" && "$compare" "$dir/cpu.out.safetensors" \
                "$dir/nccl.out.safetensors" --rtol 2e-3 --atol 2e-4 || ok=false
            $ok && echo "params and states after 2 steps:" && "$compare" \
                "$dir/cpu.params.safetensors" "$dir/nccl.params.safetensors" --rtol 2e-3 \
                --atol 2e-4 || ok=false
            if $ok; then
                pass=$((pass + 1))
            else
                fail=$((fail + 1))
                failed+=("$name --mesh $mesh --comm nccl")
            fi
        done
    done
fi
echo "run.sh: $pass passed, $fail failed"
for f in "${failed[@]}"; do
    echo "  FAILED: $f"
done
[ "$fail" -eq 0 ]
