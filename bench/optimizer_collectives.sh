#!/usr/bin/env bash
# optimizer_collectives.sh SHARDC [BEFORE_SHARDC] [OUT.md]: the collectives
# a training step runs in its optimizer phase (clip's norm, ZeRO's
# all-gathers of the updated params), counted from shardc's report
# (`--report`: every collective in program order, with its phase), and the
# step as estimated on the built-in h200 profile, for the examples that
# clip on meshes that split their gradients: tensor parallel, ZeRO 2, and
# both. With BEFORE_SHARDC (another build, the commit before a change) each
# row shows both. No GPU is involved: the figures are the compiler's own
# and do not depend on the machine; OUT.md gets the table with the commits.
set -euo pipefail
new=${1:?usage: optimizer_collectives.sh SHARDC [BEFORE_SHARDC] [OUT.md]}
old=${2:-}
out=${3:-}
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf -- "$tmp"' EXIT

configs=(
    "llama.sh --mesh 1x8"
    "llama.sh --mesh 2x2 --zero 2"
    "llama.sh --mesh 8x8 --zero 2 -D B=64"
    "moe.sh --mesh 2x2"
    "moe.sh --mesh 4x1 --zero 2"
)

# "all_reduce all_gather estimate_ms" for one config
measure() {
    local shardc=$1 cfg=$2
    # shellcheck disable=SC2086 # cfg is words
    "$shardc" "$here/examples/"$cfg --report --hw h200 > "$tmp/r" 2>&1
    awk '/^ *[0-9]+ +[a-z_]+ .* optimizer$/ { n[$2]++ }
         /step time, estimated on h200:/ { match($0, /h200: [0-9.]+/); t = substr($0, RSTART + 6, RLENGTH - 6) }
         END { printf "%d %d %s\n", n["all_reduce"], n["all_gather"], t }' "$tmp/r"
}

{
    echo "| model and mesh | optimizer all-reduces | optimizer all-gathers | estimated step on h200 |"
    echo "| --- | ---: | ---: | ---: |"
    for cfg in "${configs[@]}"; do
        read -r ar ag t < <(measure "$new" "$cfg")
        if [ -n "$old" ]; then
            read -r oar oag ot < <(measure "$old" "$cfg")
            echo "| \`$cfg\` | $oar -> $ar | $oag -> $ag | $ot -> $t ms |"
        else
            echo "| \`$cfg\` | $ar | $ag | $t ms |"
        fi
    done
} > "$tmp/table.md"
cat "$tmp/table.md"
if [ -n "$out" ]; then
    {
        echo "# The optimizer's collectives"
        echo
        echo "shardc $("$new" --version 2>/dev/null | head -1) ($(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?'))."
        echo "Machine: $(uname -m), $(nproc) cores; no GPU (the report and the estimate only)."
        echo "Date: $(date -u '+%Y-%m-%d %H:%M') UTC."
        echo
        cat "$tmp/table.md"
    } > "$out"
fi
