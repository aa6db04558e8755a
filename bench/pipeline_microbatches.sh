#!/usr/bin/env bash
# pipeline_microbatches.sh SHARDC [OUT.md]: issue 20's goal that a
# pipeline's compile time, memory and plan size do not grow with the
# microbatch count (128 microbatches costing what 4 do, within 20%).
# Compiles examples/pipeline.sh with 96 layers on the mesh 64x8x8 (8
# stages) for 4, 32 and 128 microbatches (the batch 64 sequences a
# microbatch, so the microbatch is the same size in each), twice each:
# a plan with kernels for sm_90 (NVRTC's cache warmed first, so the times
# are the compiler's, not NVRTC's) and the report alone without kernels.
# Prints a Markdown table of the wall time, the CPU time, the peak
# resident memory and the plan's bytes, each the median of REPEAT runs
# (default 3), and the ratio of 128 microbatches to 4, then one more
# compile per count timed pass by pass (--time-passes), then the plan
# file's size (no kernels) and the largest stage's peak for the 1f1b and
# interleaved(2) schedules at 8, 32 and 128 microbatches (the
# interleaved schedule takes a multiple of the stages), then a deep
# pipeline's report (96 layers on 64 stages) at 64 to 512 microbatches,
# as --auto compiles its candidates, and its plan with kernels; with OUT.md,
# writes it there with the machine and the compiler's commit.
set -euo pipefail
shardc=${1:?usage: pipeline_microbatches.sh SHARDC [OUT.md]}
out=${2:-}
repeat=${REPEAT:-3}
here=$(cd "$(dirname "$0")/.." && pwd)
model=$here/examples/pipeline.sh
tmp=$(mktemp -d)
trap 'rm -rf -- "$tmp"' EXIT
export SHARDC_CACHE_DIR=${SHARDC_CACHE_DIR:-$tmp/nvrtc-cache}

median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

# one compile: "wall cpu rss_kb" on stdout
measure() {
    /usr/bin/time -f '%e %U %S %M' -o "$tmp/time" "$shardc" "$model" -D L=96 \
        -D B=$(($1 * 64)) --microbatches "$1" --mesh 64x8x8 "${@:2}" > /dev/null
    awk '{printf "%s %.2f %s\n", $1, $2 + $3, $4}' "$tmp/time"
}

table=$tmp/table.md
{
    echo "| microbatches | output | wall s | CPU s | peak memory MB | plan MB |"
    echo "| --- | --- | --- | --- | --- | --- |"
} > "$table"
declare -A wall cpu mem plan
for m in 4 32 128; do
    "$shardc" "$model" -D L=96 -D B=$((m * 64)) --microbatches "$m" --mesh 64x8x8 \
        --arch sm_90 -o "$tmp/warm.plan" # NVRTC's cache
    plan_mb=$(awk -v b="$(stat -c %s "$tmp/warm.plan")" 'BEGIN {printf "%.1f", b / 1e6}')
    plan[$m]=$plan_mb
    for kind in plan report; do
        if [ "$kind" = plan ]; then
            args=(--arch sm_90 -o "$tmp/p.plan")
        else
            args=(--arch none --report)
        fi
        : > "$tmp/runs"
        for _ in $(seq "$repeat"); do
            measure "$m" "${args[@]}" >> "$tmp/runs"
        done
        w=$(awk '{print $1}' "$tmp/runs" | median)
        c=$(awk '{print $2}' "$tmp/runs" | median)
        r=$(awk '{print $3}' "$tmp/runs" | median)
        wall[$m$kind]=$w cpu[$m$kind]=$c mem[$m$kind]=$r
        size=$([ "$kind" = plan ] && echo "$plan_mb" || echo "-")
        printf '| %d | %s | %.2f | %.2f | %.0f | %s |\n' "$m" \
            "$([ "$kind" = plan ] && echo "plan with kernels (sm_90)" || echo "--report, no kernels")" \
            "$w" "$c" "$(awk -v k="$r" 'BEGIN {print k / 1024}')" "$size" >> "$table"
    done
done
{
    echo
    echo "128 microbatches over 4:"
    for kind in plan report; do
        awk -v w1="${wall[4$kind]}" -v w2="${wall[128$kind]}" -v m1="${mem[4$kind]}" \
            -v m2="${mem[128$kind]}" -v k="$kind" \
            'BEGIN {printf "- %s: wall time %.1fx, peak memory %.1fx\n", k, w2 / w1, m2 / m1}'
    done
    awk -v p1="${plan[4]}" -v p2="${plan[128]}" \
        'BEGIN {printf "- the plan file: %.2fx\n", p2 / p1}'
} >> "$table"
# where the time goes: one more compile with kernels per count, timed pass
# by pass (shardc --time-passes), its rows side by side
for m in 4 32 128; do
    "$shardc" "$model" -D L=96 -D B=$((m * 64)) --microbatches "$m" --mesh 64x8x8 \
        --arch sm_90 --time-passes -o "$tmp/p.plan" 2> "$tmp/passes$m"
done
{
    echo
    echo "Where the time goes, one compile with kernels each (\`shardc --time-passes\`), seconds:"
    echo
    echo "| step | 4 | 32 | 128 |"
    echo "| --- | ---: | ---: | ---: |"
    paste "$tmp/passes4" "$tmp/passes32" "$tmp/passes128" | awk -F'\t' 'NR > 1 {
        n = split($1, a, " "); split($2, b, " "); split($3, c, " ")
        name = a[1]; for (i = 2; i < n; i++) name = name " " a[i]
        if ($1 ~ /^    /) name = "the plan: " name # a step of the plan
        printf "| %s | %s | %s | %s |\n", name, a[n], b[n], c[n]
    }'
} >> "$table"
# the plan file against the schedule: the loop form holds a slotted
# buffer's copies, one per place its microbatches' values take, so a plan
# stays flat only where the memory plan reuses a few places (1F1B); no
# kernels, so the sizes are the schedule's alone
{
    echo
    echo "The plan file (no kernels, MB) against the schedule, and the largest stage's peak (MB):"
    echo
    echo "| schedule | 8 | 32 | 128 | 128 over 8 | peak at 8 | peak at 128 |"
    echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
} >> "$table"
for sched in 1f1b 'interleaved(2)'; do
    declare -A bytes arena
    for m in 8 32 128; do
        "$shardc" "$model" -D L=96 -D B=$((m * 64)) --microbatches "$m" --mesh 64x8x8 \
            --schedule "$sched" --arch none -o "$tmp/s.plan"
        bytes[$m]=$(stat -c %s "$tmp/s.plan")
        arena[$m]=$("$shardc" "$model" -D L=96 -D B=$((m * 64)) --microbatches "$m" \
            --mesh 64x8x8 --schedule "$sched" --arch none --report json |
            python3 -c 'import json, sys; print(max(s["peak_bytes"] for s in json.load(sys.stdin)["stages"]))')
    done
    awk -v s="$sched" -v a="${bytes[8]}" -v b="${bytes[32]}" -v c="${bytes[128]}" \
        -v r1="${arena[8]}" -v r2="${arena[128]}" 'BEGIN {
        printf "| %s | %.1f | %.1f | %.1f | %.2fx | %.1f | %.1f |\n", s, a / 1e6, b / 1e6,
            c / 1e6, c / a, r1 / 1e6, r2 / 1e6 }' >> "$table"
done
# a deep pipeline's report, what --auto compiles for each of its candidates
# (up to 8 microbatches a stage): 96 layers over 64 stages (1x64x8), the
# batch 512 sequences whatever the count, --report json without kernels
{
    echo
    echo "A deep pipeline's report (96 layers on 1x64x8, 64 stages, batch 512, \`--report json\`, no kernels, as \`--auto\` compiles each candidate):"
    echo
    echo "| microbatches | wall s | CPU s | peak memory MB |"
    echo "| ---: | ---: | ---: | ---: |"
} >> "$table"
deep() { # the table's rows for the deep pipeline compiled with args "$@"
    for m in 64 128 256 512; do
        : > "$tmp/runs"
        if [ "$1" = --arch ]; then # NVRTC's cache (each count is its own shapes)
            "$shardc" "$model" -D L=96 -D B=512 --microbatches "$m" --mesh 1x64x8 "$@" > /dev/null
        fi
        for _ in $(seq "$repeat"); do
            /usr/bin/time -f '%e %U %S %M' -o "$tmp/time" "$shardc" "$model" -D L=96 -D B=512 \
                --microbatches "$m" --mesh 1x64x8 "$@" > /dev/null
            awk '{printf "%s %.2f %s\n", $1, $2 + $3, $4}' "$tmp/time" >> "$tmp/runs"
        done
        printf '| %d | %.2f | %.2f | %.0f |\n' "$m" "$(awk '{print $1}' "$tmp/runs" | median)" \
            "$(awk '{print $2}' "$tmp/runs" | median)" \
            "$(awk '{print $3}' "$tmp/runs" | median | awk '{print $1 / 1024}')" >> "$table"
    done
}
deep --report json
# and its plan with kernels (sm_90, the cache warmed first), which is
# built a batch of stages at a time as the compile makes them
{
    echo
    echo "The same pipeline's plan with kernels (sm_90, \`-o FILE\`):"
    echo
    echo "| microbatches | wall s | CPU s | peak memory MB |"
    echo "| ---: | ---: | ---: | ---: |"
} >> "$table"
deep --arch sm_90 -o "$tmp/p.plan"
cat "$table"
if [ -n "$out" ]; then
    {
        echo "# A pipeline's compile against its microbatch count"
        echo
        echo "Issue 20: compile time, memory and plan size flat in the microbatch count"
        echo "(128 microbatches within 20% of 4). Measured by"
        echo "\`bench/pipeline_microbatches.sh\`: examples/pipeline.sh with 96 layers"
        echo "on 64x8x8 (8 stages, 1F1B), 64 sequences a microbatch; median of $repeat runs."
        echo
        echo "Machine: $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo),"
        echo "$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo); no GPU (NVRTC needs none)."
        echo "Compiler: $(git -C "$here" log -1 --format='%h %cs' 2>/dev/null || echo unknown). Date: $(date -u +%F)."
        echo
        cat "$table"
    } > "$out"
fi
