#!/usr/bin/env bash
# run.sh [BUILD] [--steps N] [--warmup W] [--out FILE] [--quick] [--no-torch]: a
# GPT-2-small training step (examples/transformer.sh at GPT-2 small's
# sizes, one GPU) by shardc and by PyTorch on this machine's GPU 0, written
# to bench/results/gpt2-<gpu>.md (or FILE). bench/README.md, "GPT-2 small
# against PyTorch", says what each figure is.
#
# BUILD holds shardc and shardrun (default build; with the GPU bundle,
# `. .gpu/env.sh` then .gpu/build). N timed steps (default 20, --quick 5)
# after W warmup steps (default 3) in every run. --quick also leaves out
# torch.compile f32, shardc's f32 trace and bench_cuda's table of the bf16
# plan's kernels (bench/results/cuda-kernels-gpt2-<gpu>.md), to fit in
# about 4 minutes.
# --no-torch runs shardc's parts alone (PyTorch's rows say "not run").
# Every part runs under a timeout; a part that fails is reported in the
# results file, and the script then exits 1.
#
# Environment: PYTHON (default python3, with torch), BENCH_LOG_DIR (where
# the logs, traces and reports go; default a new temporary folder),
# BENCH_COMMIT (the commit; before git's, which a copied tree may have
# stale), BENCH_HW (the hardware profile of shardc's estimate: a name or
# a FILE.json; default h200, a100 or h100 by the GPU's name), SHARDC_CACHE_DIR
# (NVRTC's cache, read by shardc). Without a GPU it prints "skipped: no
# GPU" and exits 77; bad usage exits 2.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
defines=(-D B=8 -D S=1024 -D D=768 -D NH=12 -D V=50304 -D L=12)

usage() { sed -n '2,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//'; }
die_usage() { echo "run.sh: error: $*" >&2; echo "(run 'run.sh --help' for usage)" >&2; exit 2; }

build=build steps="" warmup=3 out="" quick=0 torch=1
while [ $# -gt 0 ]; do
    case $1 in
    --steps | --warmup | --out)
        [ $# -ge 2 ] && [ -n "$2" ] || die_usage "$1 needs a value"
        case $1 in --steps) steps=$2 ;; --warmup) warmup=$2 ;; --out) out=$2 ;; esac
        shift 2
        ;;
    --quick) quick=1 && shift ;;
    --no-torch) torch=0 && shift ;;
    -h | --help) usage && exit 0 ;;
    -*) die_usage "unknown option '$1'" ;;
    *) build=$1 && shift ;;
    esac
done
[ -n "$steps" ] || steps=$((quick ? 5 : 20))
[[ $steps =~ ^[1-9][0-9]*$ ]] || die_usage "--steps '$steps': expected a number >= 1"
[[ $warmup =~ ^[1-9][0-9]*$ ]] || die_usage "--warmup '$warmup': expected a number >= 1"

# the GPU first: without one nothing else matters
gpu_csv=$(nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total \
    --format=csv,noheader 2>/dev/null | head -n 1)
if [ -z "$gpu_csv" ]; then
    why=$(command -v nvidia-smi >/dev/null && echo "nvidia-smi lists none" || echo "no nvidia-smi")
    echo "skipped: no GPU ($why)"
    exit 77
fi
IFS=, read -r gpu cc driver gpu_mem <<<"$gpu_csv"
trim() { sed 's/^ *//; s/ *$//' <<<"$1"; }
gpu=$(trim "$gpu") cc=$(trim "$cc") driver=$(trim "$driver") gpu_mem=$(trim "$gpu_mem")
arch=sm_${cc/./}
slug=$(tr '[:upper:] ' '[:lower:]-' <<<"$gpu")
# the hardware profile shardc's estimate runs on: BENCH_HW (a name or a
# FILE.json, as from bench_cuda --calibrate), else the built-in one of this GPU
if [ -z "${BENCH_HW:-}" ]; then
    case $gpu in
    *H200*) hw=h200 ;;
    *A100*) hw=a100 ;;
    *) hw=h100 ;;
    esac
else
    hw=$BENCH_HW
fi

build=$(cd "$build" 2>/dev/null && pwd) || die_usage "no folder '$build'"
for tool in shardc shardrun; do
    [ -x "$build/$tool" ] || die_usage "no $build/$tool"
done
python=${PYTHON:-python3}
out=${out:-$root/bench/results/gpt2-$slug.md}
log=${BENCH_LOG_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/gpt2bench.XXXXXX")}
mkdir -p "$log" || exit 1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpt2plans.XXXXXX") || exit 1
trap 'rm -rf -- "$tmp"' EXIT
: >"$log/commands.txt"
echo "run.sh: logs in $log" >&2

# part NAME SECONDS CMD...: CMD under a timeout, its output in NAME.log,
# its exit status in NAME.rc, the command (BUILD and the folders as
# variables) in commands.txt.
failed=0
part() {
    local name=$1 limit=$2 t0 rc
    shift 2
    printf '%q ' "$@" |
        sed "s#$tmp#\$TMP#g; s#$log#\$LOG#g; s#$build#\$BUILD#g; s#$root/##g; s/ \$//" \
        >>"$log/commands.txt"
    echo >>"$log/commands.txt"
    t0=$(date +%s.%N)
    timeout -k 10 "$limit" "$@" >"$log/$name.log" 2>&1
    rc=$?
    echo "$rc" >"$log/$name.rc"
    # the part's wall time, start to exit, in seconds (report.py's first-step table)
    awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f\n", b - a }' >"$log/$name.wall"
    echo "run.sh: $name: exit $rc, $(cat "$log/$name.wall") s" >&2
    [ "$rc" -eq 0 ] || failed=1
    return "$rc"
}

# BENCH_COMMIT first: a copy of the tree on a GPU machine may hold a stale .git
commit=${BENCH_COMMIT:-$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)}
{
    echo "gpu=$gpu"
    echo "arch=$arch"
    echo "driver=$driver"
    echo "gpu_mem=$gpu_mem"
    echo "cpu=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n 1)"
    echo "cores=$(nproc)"
    echo "mem=$(free -g 2>/dev/null | awk '/^Mem:/ {print $2 " GiB"}')"
    echo "os=$( (. /etc/os-release && echo "$PRETTY_NAME") 2>/dev/null)"
    echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "commit=$commit"
    echo "shardc=$("$build/shardc" --version 2>&1 | head -n 1)"
    echo "python=$("$python" --version 2>&1)"
    echo "warmup=$warmup"
    echo "steps=$steps"
    echo "quick=$quick"
    echo "defines=${defines[*]}"
    echo "hw=$hw"
} >"$log/meta.env"

# the models: as written (f32), and with every f32[ made bf16[ (bf16
# params and values, trained through f32 masters)
sed 's/f32\[/bf16[/g' "$root/examples/transformer.sh" >"$tmp/bf16.sh"
cp "$tmp/bf16.sh" "$log/transformer-bf16.sh"
echo "sed 's/f32\\[/bf16[/g' examples/transformer.sh > \$TMP/bf16.sh" >>"$log/commands.txt"

shardrun_steps=$((1 + warmup + steps))
trace_steps=$((quick ? 3 : 4))
for p in f32 bf16; do
    model=$root/examples/transformer.sh
    [ "$p" = f32 ] || model=$tmp/$p.sh
    # the report and the estimated timeline of a step, on this GPU's profile
    part "report-$p" 60 "$build/shardc" "$model" "${defines[@]}" --mesh 1x1 --report json \
        --hw "$hw" --trace "$log/estimate-$p.json" -o "$log/report-$p.json"
    part "compile-$p" 180 "$build/shardc" "$model" "${defines[@]}" --mesh 1x1 \
        --arch "$arch" -o "$tmp/$p.plan" || continue
    # one step alone: shardrun's start to its exit, and its first step (issue 20)
    part "first-$p" 120 "$build/shardrun" "$tmp/$p.plan" --backend cuda --steps 1
    part "shardc-$p" 120 "$build/shardrun" "$tmp/$p.plan" --backend cuda --steps "$shardrun_steps"
    if [ "$p" = bf16 ]; then
        part "shardc-$p-graph" 120 "$build/shardrun" "$tmp/$p.plan" --backend cuda --graph \
            --steps "$shardrun_steps"
    fi
    if [ "$p" = bf16 ] || [ "$quick" = 0 ]; then
        part "trace-$p" 120 "$build/shardrun" "$tmp/$p.plan" --backend cuda \
            --steps "$trace_steps" --trace "$log/trace-$p.json"
    fi
done

# every kernel of the bf16 plan against the copy bandwidth and every matmul
# against cuBLASLt called directly (bench_cuda), into its own results file;
# not with --quick
if [ "$quick" = 0 ] && [ -x "$build/bench/bench_cuda" ]; then
    part "bench-cuda-bf16" 600 "$build/bench/bench_cuda" --model "$tmp/bf16.sh" "${defines[@]}" \
        --mesh 1x1 --out "$log/cuda-kernels-bf16.md" &&
        mkdir -p "$(dirname "$out")" && cp "$log/cuda-kernels-bf16.md" "$(dirname "$out")/cuda-kernels-gpt2-$slug.md"
fi

modes=(eager-f32 eager-bf16 compile-bf16)
[ "$quick" = 1 ] || modes+=(compile-f32)
[ "$torch" = 1 ] || modes=()
for mode in ${modes[@]+"${modes[@]}"}; do
    extra=()
    if [ "$mode" = compile-bf16 ] || { [ "$mode" = eager-f32 ] && [ "$quick" = 0 ]; }; then
        extra=(--profile)
    fi
    part "torch-$mode" "$([[ $mode == compile* ]] && echo 240 || echo 120)" \
        "$python" "$here/gpt2_torch.py" --modes "$mode" --warmup "$warmup" --steps "$steps" \
        "${extra[@]}"
done

mkdir -p "$(dirname "$out")" || exit 1
if ! "$python" "$here/report.py" "$log" >"$out.tmp"; then
    echo "run.sh: error: could not write $out (logs in $log)" >&2
    rm -f "$out.tmp"
    exit 1
fi
mv "$out.tmp" "$out"
cp "$out" "$log/"
echo "run.sh: wrote $out" >&2
exit "$failed"
