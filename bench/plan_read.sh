#!/usr/bin/env bash
# plan_read.sh SHARDC BENCH_PLAN_READ [OUT.md]: what a process pays to read
# a pipeline's plan and make plain the stages it runs, against the
# microbatch count (issue 20, the step at scale). Compiles
# examples/pipeline.sh with 96 layers on the mesh 64x8x8 (8 stages, 64
# sequences a microbatch) for 4, 32 and 128 microbatches, with kernels for
# sm_90 (NVRTC's cache warmed first), and runs bench_plan_read on each
# plan twice: every stage expanded (what each process did before), and
# stage 0 alone (what a process of an MPI job does now). Prints a Markdown
# table of the read and expand seconds, the instructions held and the
# peak resident memory, each the median of REPEAT runs (default 3); with
# OUT.md, writes it there with the machine and the compiler's commit.
set -euo pipefail
shardc=${1:?usage: plan_read.sh SHARDC BENCH_PLAN_READ [OUT.md]}
bench=${2:?usage: plan_read.sh SHARDC BENCH_PLAN_READ [OUT.md]}
out=${3:-}
repeat=${REPEAT:-3}
here=$(cd "$(dirname "$0")/.." && pwd)
model=$here/examples/pipeline.sh
tmp=$(mktemp -d)
trap 'rm -rf -- "$tmp"' EXIT
export SHARDC_CACHE_DIR=${SHARDC_CACHE_DIR:-$tmp/nvrtc-cache}

median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

table=$tmp/table.md
{
    echo "| microbatches | plan MB | stages made plain | read s | expand s | instructions held | peak memory MB |"
    echo "| --- | --- | --- | --- | --- | --- | --- |"
} > "$table"
for m in 4 32 128; do
    "$shardc" "$model" -D L=96 -D B=$((m * 64)) --microbatches "$m" --mesh 64x8x8 \
        --arch sm_90 -o "$tmp/p$m.plan"
    size=$(awk -v b="$(stat -c %s "$tmp/p$m.plan")" 'BEGIN {printf "%.1f", b / 1e6}')
    for which in all 0; do
        : > "$tmp/runs"
        for _ in $(seq "$repeat"); do
            if [ "$which" = all ]; then
                "$bench" "$tmp/p$m.plan" >> "$tmp/runs"
            else
                "$bench" "$tmp/p$m.plan" --stage 0 >> "$tmp/runs"
            fi
        done
        r=$(awk '{print $1}' "$tmp/runs" | median)
        e=$(awk '{print $2}' "$tmp/runs" | median)
        n=$(awk '{print $3}' "$tmp/runs" | median)
        mem=$(awk '{print $4}' "$tmp/runs" | median)
        printf '| %d | %s | %s | %.2f | %.2f | %d | %.0f |\n' "$m" "$size" \
            "$([ "$which" = all ] && echo "all 8" || echo "stage 0")" "$r" "$e" "$n" "$mem" \
            >> "$table"
    done
done
cat "$table"
if [ -n "$out" ]; then
    {
        echo "# Reading a pipeline's plan and making its stages plain"
        echo
        echo "Issue 20 (the step at scale): what each process pays before its first"
        echo "step. Measured by \`bench/plan_read.sh\`: examples/pipeline.sh with 96"
        echo "layers on 64x8x8 (8 stages, 1F1B), 64 sequences a microbatch, kernels"
        echo "for sm_90; \`bench_plan_read\` reads the plan as written (decoded and"
        echo "validated, a loop form a stage at a time) and expands every stage, or"
        echo "stage 0 alone, as a process of an MPI job now does. Median of $repeat runs."
        echo
        echo "Machine: $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo),"
        echo "$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo); no GPU."
        echo "Compiler: $(git -C "$here" log -1 --format='%h %cs'). Date: $(date +%F)."
        echo
        cat "$table"
    } > "$out"
fi
