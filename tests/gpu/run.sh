#!/usr/bin/env bash
# tests/gpu/run.sh [BUILD]: the CUDA backend against the CPU backend, on a
# machine with a GPU (no ctest needs one: DESIGN.md §7). Every example
# (examples/*.sh) on the meshes 1, 2 and 2x2 (1s added for the axes the
# example has beyond them: 2x2 is 2x2x1 for dp, tp, pp) is compiled once,
# with its kernels (--arch sm_80,sm_90, or $GPU_ARCH), then run for 2 steps
# from the same seed with --comm local on each backend (every rank a thread;
# all of them on the one GPU, their collectives, sends and receives device
# to device: runtime/comm/comm_dev.h; with two GPUs or more they go through the
# host instead); the outputs of the last step and the params
# and states after it must agree: |cuda - cpu| <= 2e-4 + 2e-3 |cpu| per
# element (f32 on both, but sums, dot products and softmax in other orders,
# expf and matmuls the GPU's own; st_compare prints the worst error).
#
# Then GPT-2 shapes (one layer of transformer.sh at S = 1024, D = 768, 12
# heads of 64) in f32 and bf16, and attention tiles left partly empty
# (tests/models/attn_shapes.sh), and f32 matmuls as bf16 parts (shardc
# --f32-matmul bf16x3), each against the CPU; params and inputs
# made from the seed on the device, the CPU's bits
# (tests/models/init_bits.sh); a plan of the default --arch, the local
# GPU's; mlp on meshes 1 and
# 2x2 for 3 steps with --graph and --trace against 3 CPU steps (and the
# timeline through tests/tools/check_trace.py); vocab_parallel.sh on 2x2
# from a file of batches, eagerly and by graphs, and a label outside its
# classes failing with the CPU's words; i32 division (tests/models/i32_div.sh)
# to the bit, and a zero divisor failing with the CPU's words; a checkpoint saved from
# the GPU and resumed there against the same steps straight; and an
# embedding id outside the table, which must fail the run with the CPU
# backend's message naming the kernel. Then the same plans of mesh 1
# (and 2 with two GPUs) with --comm nccl under mpirun, one process per
# GPU, against the CPU runs. Last, the Python package on the cuda backend
# from numpy and torch tensors (tests/gpu/python_cuda.py) against the CPU.
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

# Whether PLAN run on INPUTS fails on the GPU (exit 1) with the CPU
# backend's message for op OP on rank RANK (a bracket expression where
# either of two ranks may report first): the place in MODEL (a pattern)
# as the CPU names it, then "stage 0, instruction I (OP, kernel kN_OP): "
# and the CPU's text. Prints the GPU's message.
same_error() {
    local plan=$1 inputs=$2 op=$3 rank=$4 model=$5 cpu gpu rc where place text want
    cpu=$("$shardrun" "$plan" --backend cpu --inputs "$inputs" --quiet 2>&1)
    gpu=$("$shardrun" "$plan" --backend cuda --inputs "$inputs" --quiet 2>&1)
    rc=$?
    # "rank R: FILE:LINE:COL: instruction I (OP): TEXT" on the CPU
    where=$(echo "$cpu" | sed -n "s/^shardrun: error: rank $rank: \(.*$model:[0-9]*:[0-9]*: \)instruction [0-9]* ($op): .*/\1/p")
    place=$(echo "$cpu" | sed -n "s/^shardrun: error: rank $rank: .*instruction \([0-9]*\) ($op): .*/\1/p")
    text=${cpu#*($op): }
    want="shardrun: error: rank $rank: ${where}stage 0, instruction $place ($op, kernel k[0-9]*_$op): $text"
    echo "$gpu"
    [ "$rc" -eq 1 ] && [ -n "$place" ] && [ -n "$where" ] && echo "$gpu" | grep -qx -- "$want"
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
# GPT-2 shapes (examples/transformer.sh with S = 1024, D = 768, 12 heads of
# 64, one layer, a smaller vocabulary and batch so the CPU run stays
# short), in f32 with the tolerance above and in bf16 (every f32 of the
# model made bf16: params through f32 masters), 1 step, where each op
# rounds to bf16 on both backends but sums in other orders: |cuda - cpu| <=
# 2e-3 + 2e-2 |cpu| (a few bf16 ulps; adamw's first step moves a param by
# about lr = 3e-4 either way, so a gradient near 0 whose sign differs
# stays inside the absolute part). Then tests/models/attn_shapes.sh:
# attention tiles left partly empty (head width 80, value width 48, 200
# queries against 136 keys), tests/models/attn_bf16.sh: bf16 and f16
# attention forwards on tensor cores (WMMA) at shapes that leave their
# tiles partly empty, with the bf16 tolerance, and
# tests/models/attn_tiles.sh: three tiles of 64 each way, the next copied
# by cp.async while this one is used, and heads of 128, whose tiles are
# staged between barriers; tests/models/attn_f32.sh: f32 attention on
# tensor cores (as bf16 parts) with its heads inner, with the f32
# tolerance; then GPT-2's layer in f32 and mlp.sh on 2x2 (bias, gelu and
# the residual in cuBLASLt's epilogues) and tests/models/parts_odd.sh (K
# of 5 and 3: views of parts that start 2-byte aligned, for which cuBLASLt
# is asked for algorithms) with --f32-matmul bf16x3, each f32 matmul three
# cuBLASLt calls of bf16 parts (the CPU backend computes the same sums),
# with the f32 tolerance; then tests/models/clip_total.sh in f32 and bf16,
# clip's norm one kernel whose parts take two chunks of blocks and whose
# last block runs the factor (every example with clip runs it too); then
# tests/models/concat_views.sh on 2x2 in f32 and on one GPU in bf16,
# concats with their branches in elementwise kernels (RoPE's rotation,
# three pieces along a middle dim, a concat inside a concat) and their
# gradients' zero pads (llama.sh and moe.sh above rotate so too); then
# tests/models/attn_groups.sh: grouped-query attention whose kernels read
# the key heads themselves and sum each key head's gradient over its
# group, in f32, bf16 (one key head, and with the heads inner) and f16,
# with the bf16 tolerance; then tests/models/view_lanes.sh: concats whose
# kernels read a vector's views at once (aligned 16-byte loads) or lane by
# lane, with the f32 tolerance, and tests/models/view_shared.sh: a mean
# loss's gradient, a [1], expanded over a concat's pieces in such a
# kernel (loaded once for a vector's lanes, where a vector load had read
# past its buffer); then tests/models/xent_rows.sh:
# cross_entropy over GPT-2's 50304 classes in bf16 with its gradient in
# the loss's kernel (a second pass over each row), and over 12000 with a
# gradient kernel of its own, with the bf16 tolerance.
gpt2=(-D B=2 -D S=1024 -D D=768 -D NH=12 -D V=2048 -D L=1)
mkdir -p "$tmp/models"
sed 's/f32\[/bf16[/g' "$root/examples/transformer.sh" > "$tmp/models/transformer_bf16.sh"
for c in "f32 $root/examples/transformer.sh 1 2e-3 2e-4" \
         "bf16 $tmp/models/transformer_bf16.sh 1 2e-2 2e-3" \
         "attn_shapes $root/tests/models/attn_shapes.sh 2 2e-3 2e-4" \
         "attn_bf16 $root/tests/models/attn_bf16.sh 2 2e-2 2e-3" \
         "attn_tiles $root/tests/models/attn_tiles.sh 2 2e-2 2e-3" \
         "attn_f32 $root/tests/models/attn_f32.sh 2 2e-3 2e-4" \
         "f32_x3 $root/examples/transformer.sh 1 2e-3 2e-4 --f32-matmul bf16x3" \
         "mlp_x3 $root/examples/mlp.sh 2 2e-3 2e-4 --f32-matmul bf16x3" \
         "parts_odd $root/tests/models/parts_odd.sh 2 2e-3 2e-4 --f32-matmul bf16x3" \
         "clip_total $root/tests/models/clip_total.sh 2 2e-3 2e-4" \
         "clip_bf16 $root/tests/models/clip_total.sh 2 2e-2 2e-3 --dtype bf16" \
         "concat_views $root/tests/models/concat_views.sh 2 2e-3 2e-4" \
         "concat_bf16 $root/tests/models/concat_views.sh 2 2e-2 2e-3 --dtype bf16" \
         "attn_groups $root/tests/models/attn_groups.sh 2 2e-2 2e-3" \
         "view_lanes $root/tests/models/view_lanes.sh 2 2e-3 2e-4" \
         "view_shared $root/tests/models/view_shared.sh 2 2e-3 2e-4" \
         "xent_rows $root/tests/models/xent_rows.sh 2 2e-2 2e-3"; do
    read -r what model steps rtol atol flags <<< "$c"
    dir=$tmp/gpt2-$what
    mkdir -p "$dir"
    defs=()
    case $what in
    attn_* | parts_odd | view_lanes | view_shared | xent_rows) mesh=1 ;;
    clip_* | concat_bf16) mesh=1x1 ;;
    concat_views) mesh=2x2 ;;
    mlp_x3) mesh=2x2 ;;
    *) defs=("${gpt2[@]}"); mesh=1x1 ;;
    esac
    echo "== $(basename "$model") ${defs[*]} --mesh $mesh $flags, $steps step(s)"
    ok=true
    # shellcheck disable=SC2086 # flags: words
    "$shardc" "$model" ${defs[@]+"${defs[@]}"} --mesh $mesh --arch "${GPU_ARCH:-sm_80,sm_90}" \
        $flags -o "$dir/plan" || ok=false
    for backend in cpu cuda; do
        $ok && "$shardrun" "$dir/plan" --backend "$backend" --comm local --seed 7 \
            --steps "$steps" --quiet --outputs "$dir/$backend.out.safetensors" \
            --save-params "$dir/$backend.params.safetensors" || ok=false
    done
    $ok && echo "outputs:" && "$compare" "$dir/cpu.out.safetensors" "$dir/cuda.out.safetensors" \
        --rtol "$rtol" --atol "$atol" || ok=false
    $ok && echo "params and states after $steps step(s):" && "$compare" \
        "$dir/cpu.params.safetensors" "$dir/cuda.params.safetensors" --rtol "$rtol" \
        --atol "$atol" || ok=false
    if $ok; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        failed+=("$(basename "$model") $what")
    fi
done

# Made from the seed on the device: tests/models/init_bits.sh (params and
# inputs of every dtype and initializer, split over 2x2, output with no
# step) run on both backends; the CUDA backend makes them with the plan's
# init module (runtime/exec/init_gen.h), and they must be the CPU's bits.
echo "== init_bits --mesh 2x2: made from the seed on the device, the CPU's bits"
dir=$tmp/init-bits
mkdir -p "$dir"
ok=true
"$shardc" "$root/tests/models/init_bits.sh" --mesh 2x2 --arch "${GPU_ARCH:-sm_80,sm_90}" \
    -o "$dir/plan" || ok=false
for backend in cpu cuda; do
    $ok && "$shardrun" "$dir/plan" --backend "$backend" --comm local --seed 7 --quiet \
        --outputs "$dir/$backend.out.safetensors" || ok=false
done
$ok && "$compare" "$dir/cpu.out.safetensors" "$dir/cuda.out.safetensors" --rtol 0 --atol 0 &&
    cmp "$dir/cpu.out.safetensors" "$dir/cuda.out.safetensors" || ok=false
if $ok; then
    pass=$((pass + 1))
else
    fail=$((fail + 1))
    failed+=("init_bits on the device")
fi

# The default --arch on a machine with one kind of GPU is that GPU's (from
# NVML), the same as --arch native's (from the driver): mlp.sh
# compiled without --arch (and without $SHARDC_ARCH) is the plan of
# --arch native, one target (the second compile's kernels come from the
# cache the first wrote, so the bytes are comparable), and it runs.
echo "== the default --arch: the local GPU's"
dir=$tmp/default-arch
mkdir -p "$dir"
ok=true
"$shardc" "$root/examples/mlp.sh" --mesh 1x1 --arch native -o "$dir/native.plan" &&
    "$shardc" "$root/examples/mlp.sh" --mesh 1x1 -o "$dir/default.plan" &&
    cmp "$dir/native.plan" "$dir/default.plan" || ok=false
targets=$("$shardc" "$root/examples/mlp.sh" --mesh 1x1 --emit schedule | grep -o 'cubins for [^;]*')
echo "default: $targets"
case $targets in *,*) ok=false ;; esac
$ok && "$shardrun" "$dir/default.plan" --backend cuda --steps 1 --quiet || ok=false
if $ok; then
    pass=$((pass + 1))
else
    fail=$((fail + 1))
    failed+=("the default --arch")
fi

# CUDA graphs and the GPU's timeline: mlp on mesh 1 (one graph) and 2x2
# (graphs between the collectives) for 3 steps with --graph (step 1 runs
# eagerly, step 2 is captured and launched, step 3 launches the graphs)
# and --trace, against 3 steps on the CPU, the same tolerance; the
# timeline passes check_trace.py (every rank, no overlap on a stream, the
# same instructions every step) and names the kernels.
for m in 1 2x2; do
    mesh=$(mesh_for "$m" 2)
    ranks=$(( $(echo "$mesh" | tr 'x' '*') ))
    dir=$tmp/graph-$mesh
    mkdir -p "$dir"
    echo "== mlp --mesh $mesh --graph --trace, 3 steps"
    ok=true
    "$shardc" "$root/examples/mlp.sh" --mesh "$mesh" --arch "${GPU_ARCH:-sm_80,sm_90}" \
        -o "$dir/plan" || ok=false
    for backend in cpu cuda; do
        extra=()
        [ "$backend" = cuda ] && extra=(--graph --trace "$dir/trace.json")
        $ok && "$shardrun" "$dir/plan" --backend "$backend" --comm local --seed 7 --steps 3 \
            --quiet --outputs "$dir/$backend.out.safetensors" \
            --save-params "$dir/$backend.params.safetensors" ${extra[@]+"${extra[@]}"} || ok=false
    done
    $ok && echo "outputs:" && "$compare" "$dir/cpu.out.safetensors" "$dir/cuda.out.safetensors" \
        --rtol 2e-3 --atol 2e-4 || ok=false
    $ok && echo "params and states after 3 steps:" && "$compare" "$dir/cpu.params.safetensors" \
        "$dir/cuda.params.safetensors" --rtol 2e-3 --atol 2e-4 || ok=false
    $ok && python3 "$root/tests/tools/check_trace.py" "$dir/trace.json" --ranks "$ranks" \
        --steps 3 && grep -q '"cat": "kernel"' "$dir/trace.json" || ok=false
    if $ok; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        failed+=("mlp --mesh $mesh --graph --trace")
    fi
done

# Inputs from a file by graphs, and a vocabulary-parallel step:
# tests/models/vocab_parallel.sh on 2x2 (its checks of ids and labels and
# the amax of its row numbers are kernels of their own, so the step has no
# host work) for 3 steps from a file of 3 batches, eagerly and with
# --graph, against the CPU: the host reads each step's batch into
# page-locked memory before the step and the graph copies it in, so step
# 3's graphs must see batch 3. Then a label outside the classes fails the
# run with the CPU backend's words after the check kernel's name.
dir=$tmp/vocab
mkdir -p "$dir"
"$shardc" "$root/tests/models/vocab_parallel.sh" --mesh 2x2 --arch "${GPU_ARCH:-sm_80,sm_90}" \
    -o "$dir/plan" &&
    python3 "$root/tests/tools/make_batches.py" "$dir/in" 3 'tokens=I32[4,8]<128' \
        'targets=I32[4,8]<128'
vocab_ok=$?
for how in eager graph; do
    echo "== vocab_parallel --mesh 2x2, 3 steps from a file, $how"
    ok=true
    [ "$vocab_ok" -eq 0 ] || ok=false
    for backend in cpu cuda; do
        extra=()
        [ "$backend" = cuda ] && [ "$how" = graph ] && extra=(--graph)
        $ok && "$shardrun" "$dir/plan" --backend "$backend" --comm local --seed 7 --steps 3 \
            --inputs "$dir/in" --quiet --outputs "$dir/$backend.out.safetensors" \
            --save-params "$dir/$backend.params.safetensors" \
            ${extra[@]+"${extra[@]}"} || ok=false
    done
    $ok && echo "outputs:" && "$compare" "$dir/cpu.out.safetensors" "$dir/cuda.out.safetensors" \
        --rtol 2e-3 --atol 2e-4 || ok=false
    $ok && echo "params and states after 3 steps:" && "$compare" "$dir/cpu.params.safetensors" \
        "$dir/cuda.params.safetensors" --rtol 2e-3 --atol 2e-4 || ok=false
    if $ok; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        failed+=("vocab_parallel --mesh 2x2 from a file, $how")
    fi
done
echo "== a label outside the classes, vocabulary-parallel"
ok=true
labels=$(seq -s, 0 31 | sed 's/^0,/128,/')
python3 "$root/tests/tools/make_st.py" "$dir/bad" "tokens=I32[4,8]:$(seq -s, 0 31)" \
    "targets=I32[4,8]:$labels" || ok=false
# either rank holding the first rows reports it (tp splits the classes)
$ok && [ "$vocab_ok" -eq 0 ] &&
    same_error "$dir/plan" "$dir/bad" check_labels "[01]" 'vocab_parallel\.sh' || ok=false
if $ok; then
    pass=$((pass + 1))
else
    fail=$((fail + 1))
    failed+=("a label outside the classes, vocabulary-parallel")
fi

# Division of i32, by a value a kernel of its own, by a const inside an
# elementwise kernel: tests/models/i32_div.sh on 2 ranks from a file
# (INT32_MIN / -1 and quotients of both signs among them)
# against the CPU to the bit, then a zero divisor failing the run with the
# CPU backend's words after the div kernel's name.
echo "== i32 division --mesh 2, and a zero divisor"
dir=$tmp/div
mkdir -p "$dir"
ok=true
"$shardc" "$root/tests/models/i32_div.sh" --mesh 2 --arch "${GPU_ARCH:-sm_80,sm_90}" \
    -o "$dir/plan" || ok=false
a="-2147483648,$(seq -s, -11 -1),$(seq -s, 1 11)"
$ok && python3 "$root/tests/tools/make_st.py" "$dir/in" "a=I32[4,6]:$a" "b=I32[6]:-1,3,-2,5,7,-4" \
    "c=I32[4,1]:2,-3,4,5" || ok=false
$ok && python3 "$root/tests/tools/make_st.py" "$dir/zero" "a=I32[4,6]:$a" "b=I32[6]:-1,3,-2,0,7,-4" \
    "c=I32[4,1]:2,-3,4,5" || ok=false
for backend in cpu cuda; do
    $ok && "$shardrun" "$dir/plan" --backend "$backend" --inputs "$dir/in" --quiet \
        --outputs "$dir/$backend.out.safetensors" || ok=false
done
$ok && "$compare" "$dir/cpu.out.safetensors" "$dir/cuda.out.safetensors" --rtol 0 --atol 0 ||
    ok=false
# each rank's first zero is its result index 3
$ok && same_error "$dir/plan" "$dir/zero" div "[01]" 'i32_div\.sh' || ok=false
if $ok; then
    pass=$((pass + 1))
else
    fail=$((fail + 1))
    failed+=("i32 division --mesh 2, and a zero divisor")
fi

# Params and states stay on the GPU between steps and come to the host
# only to be saved: transformer on mesh 2x1 (two ranks on the GPU), 3
# steps straight against 2 steps saved as a checkpoint (--save-every 1)
# and resumed for the third, each saving its params; the same GPU and
# kernels, so within 1e-6 (the resumed run reads back exactly what was
# saved).
echo "== transformer --mesh 2x1: 3 steps against 2, a checkpoint, and 1 resumed"
dir=$tmp/ckpt
mkdir -p "$dir"
ok=true
"$shardc" "$root/examples/transformer.sh" --mesh 2x1 --arch "${GPU_ARCH:-sm_80,sm_90}" \
    -o "$dir/plan" || ok=false
$ok && "$shardrun" "$dir/plan" --backend cuda --seed 7 --steps 3 --quiet \
    --save-params "$dir/straight.safetensors" || ok=false
$ok && "$shardrun" "$dir/plan" --backend cuda --seed 7 --steps 2 --quiet --save "$dir/ck" \
    --save-every 1 || ok=false
$ok && "$shardrun" "$dir/plan" --backend cuda --seed 7 --steps 1 --quiet --resume "$dir/ck" \
    --save-params "$dir/resumed.safetensors" || ok=false
$ok && "$compare" "$dir/straight.safetensors" "$dir/resumed.safetensors" --rtol 1e-6 \
    --atol 0 || ok=false
if $ok; then
    pass=$((pass + 1))
else
    fail=$((fail + 1))
    failed+=("transformer checkpoint on the GPU")
fi

# An id outside the table on the GPU: the embedding kernel records it,
# the run fails after the step with the CPU backend's message, the place
# in the model as the CPU backend names it, then the kernel: "rank 1:
# .../embed.model:6:5: stage 0, instruction 3 (embedding, kernel
# k2_embedding): embedding id 9 at index 5 is outside the table's 8 rows".
echo "== an embedding id outside the table"
dir=$tmp/bad-id
mkdir -p "$dir"
ok=true
"$shardc" "$root/tests/lit/run/embed.model" --mesh 2 --arch "${GPU_ARCH:-sm_80,sm_90}" \
    -o "$dir/plan" &&
    python3 "$root/tests/tools/make_st.py" "$dir/in" ids=I32[4,3]:0,1,2,3,4,5,6,7,1,2,3,9 ||
    ok=false
$ok && same_error "$dir/plan" "$dir/in" embedding 1 'embed\.model' || ok=false
if $ok; then
    pass=$((pass + 1))
else
    fail=$((fail + 1))
    failed+=("embedding id outside the table")
fi

# NCCL (--comm nccl): one process per GPU under mpirun, so a mesh of as
# many ranks as GPUs (NCCL refuses two ranks on one GPU): mesh 1 always,
# and 2 where the machine has two GPUs or more; the outputs and params of
# the CPU runs above are the reference, with the same tolerance. Each
# eagerly and with --graph (the collectives captured into the graphs; on
# mesh 1 a plan has none).
mpirun=${MPIRUN:-$(command -v mpirun || true)}
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
run_nccl() {
    local plan=$1 dir=$2 np=$3
    shift 3
    "$mpirun" --allow-run-as-root --oversubscribe -np "$np" "$shardrun" "$plan" --backend cuda \
        --comm nccl --timeout 120 --seed 7 --steps 2 --quiet "$@" \
        --outputs "$dir/nccl.out.safetensors" --save-params "$dir/nccl.params.safetensors"
}
if [ -z "$mpirun" ]; then
    echo "== nccl: skipped: no mpirun"
else
    for model in "$root"/examples/*.sh; do
        name=$(basename "$model" .sh)
        axes=$("$shardc" "$model" --emit ir | head -1 | tr ',' '\n' | wc -l)
        for m in 1 2; do
          for graph in "" --graph; do
            [ "$m" -le "${ngpu:-1}" ] || [ "$m" -eq 1 ] || continue
            mesh=$(mesh_for "$m" "$axes")
            dir=$tmp/$name-$mesh
            [ -f "$dir/cpu.out.safetensors" ] || continue
            echo "== $name --mesh $mesh --comm nccl $graph (mpirun -np $m)"
            ok=true
            run_nccl "$dir/plan" "$dir" "$m" $graph || ok=false
            $ok && echo "outputs:" && "$compare" "$dir/cpu.out.safetensors" \
                "$dir/nccl.out.safetensors" --rtol 2e-3 --atol 2e-4 || ok=false
            $ok && echo "params and states after 2 steps:" && "$compare" \
                "$dir/cpu.params.safetensors" "$dir/nccl.params.safetensors" --rtol 2e-3 \
                --atol 2e-4 || ok=false
            if $ok; then
                pass=$((pass + 1))
            else
                fail=$((fail + 1))
                failed+=("$name --mesh $mesh --comm nccl $graph")
            fi
          done
        done
    done
fi
# Python: the package (python/shardc over $build/libshardc.so) runs the
# plan of mlp on mesh 1 on the cuda backend from numpy inputs
# (tests/gpu/python_cuda.py), against shardrun's CPU run of the same plan
# on the same inputs, 2 steps, with the tolerance above; and binds torch
# CPU tensors by DLPack in place.
py=${PYTHON:-python3}
# the library by any of its names: shared/gpu/bundle.sh carries regular
# files, so a bundled build has libshardc.so.0.1.0 and not the links to it
lib=$(ls "$build"/libshardc.so "$build"/libshardc.so.* 2>/dev/null | head -n 1)
if [ -z "$lib" ] || ! "$py" -c 'import numpy' 2> /dev/null; then
    echo "== python: skipped: no $build/libshardc.so or no numpy for $py"
else
    dir=$tmp/python
    mkdir -p "$dir"
    echo "== python: mlp --mesh 1 on cuda from numpy"
    ok=true
    "$shardc" "$root/examples/mlp.sh" --mesh 1x1 --arch "${GPU_ARCH:-sm_80,sm_90}" \
        -o "$dir/plan" || ok=false
    $ok && SHARDC_LIBRARY=$lib PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}" \
        "$py" "$root/tests/gpu/python_cuda.py" "$dir/plan" "$dir" || ok=false
    $ok && "$shardrun" "$dir/plan" --backend cpu --comm local --seed 7 --steps 2 --quiet \
        --inputs "$dir/inputs.safetensors" --outputs "$dir/cpu.out.safetensors" \
        --save-params "$dir/cpu.params.safetensors" || ok=false
    $ok && echo "outputs:" && "$compare" "$dir/cpu.out.safetensors" \
        "$dir/py.out.safetensors" --rtol 2e-3 --atol 2e-4 || ok=false
    $ok && echo "params and states after 2 steps:" && "$compare" \
        "$dir/cpu.params.safetensors" "$dir/py.params.safetensors" --rtol 2e-3 \
        --atol 2e-4 || ok=false
    if $ok; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        failed+=("python: mlp on cuda")
    fi
fi
echo "run.sh: $pass passed, $fail failed"
for f in "${failed[@]}"; do
    echo "  FAILED: $f"
done
[ "$fail" -eq 0 ]
