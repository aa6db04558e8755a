#!/usr/bin/env bash
# docs.sh ROOT: keeps docs/ honest (ctest docs/check).
#
# 1. Every program in docs/language.md compiles as the page says. A block
#    fenced ```shard is a complete program that must compile to a plan; a
#    block fenced ```shard-error must be refused as a user error (exit 1)
#    with the text of its `# error: TEXT` line in the message. The block's
#    first line is `# mesh: SIZES` (the --mesh it is compiled for, e.g.
#    2x2) or `# mesh: none` (no --mesh); a line `# define: NAME=VALUE ...`
#    adds -D options. Other fences (```text, ```console) are fragments and
#    are not compiled.
# 2. The layout table of docs/design.md (the `|` rows of its "Layout"
#    section) names only paths that exist (a tracked file, or a folder
#    holding one), and names every top-level folder of the repository.
#
# Reads SHARDC (build/shardc). Fails naming the doc's line at fault.
set -uo pipefail

if [ $# -ne 1 ]; then
    echo "usage: docs.sh ROOT" >&2
    exit 2
fi
root=$(realpath -- "$1") || exit 1
shardc=${SHARDC:-$root/build/shardc}
lang=$root/docs/language.md
design=$root/docs/design.md
tmp=$(mktemp -d) || exit 1
trap 'rm -rf -- "$tmp"' EXIT
fail=0

# ---- 1. the language reference's programs ----

# Writes each shard / shard-error block to $tmp/b<LINE>.sh (LINE: the
# doc's line of its first program line) and prints "LINE KIND" per block.
awk -v dir="$tmp" '
    !inb && /^```shard(-error)?[ \t]*$/ {
        inb = 1; kind = $0; sub(/^```/, "", kind); sub(/[ \t]*$/, "", kind)
        start = NR + 1; file = dir "/b" start ".sh"; printf "" > file
        next
    }
    inb && /^```/ { inb = 0; close(file); print start, kind; next }
    inb { print > file }
    END { if (inb) { print "unclosed " start; exit 1 } }
' "$lang" > "$tmp/blocks" || {
    echo "FAIL: $lang: a shard block is not closed"
    exit 1
}

# The header lines of block file $1 (bash builtins only: this runs once
# per block): sets mesh (SIZES, none, or empty when the first line is not
# a mesh line), defines (-D options) and want (the error text).
read_header() {
    local l d first=1
    mesh="" want=""
    defines=()
    while IFS= read -r l; do
        if [ $first = 1 ] && [[ $l =~ ^#\ mesh:\ *([0-9x]+|none)[[:space:]]*$ ]]; then
            mesh=${BASH_REMATCH[1]}
        elif [[ $l =~ ^#\ define:(.*)$ ]]; then
            for d in ${BASH_REMATCH[1]}; do defines+=(-D "$d"); done
        elif [[ $l =~ ^#\ error:\ *(.*)$ ]] && [ -z "$want" ]; then
            want=${BASH_REMATCH[1]}
        fi
        first=0
    done < "$1"
}

# Prints shardc's output for the block at doc line $1 (file $2), its
# FILE:LINE:COL places turned into places in docs/language.md.
show() {
    local l
    while IFS= read -r l; do
        if [[ $l =~ ^"$2":([0-9]+):(.*)$ ]]; then
            l="docs/language.md:$(($1 + BASH_REMATCH[1] - 1)):${BASH_REMATCH[2]}"
        fi
        printf '%s\n' "$l"
    done <<< "$3"
}

nblocks=0
while read -r line kind; do
    nblocks=$((nblocks + 1))
    f=$tmp/b$line.sh
    read_header "$f"
    if [ -z "$mesh" ]; then
        echo "FAIL: docs/language.md:$line: a $kind block must start with '# mesh: SIZES' or '# mesh: none'"
        fail=1
        continue
    fi
    args=(--arch none -o "$tmp/b$line.plan" "${defines[@]}")
    [ "$mesh" = none ] || args+=(--mesh "$mesh")
    out=$("$shardc" "$f" "${args[@]}" 2>&1)
    status=$?
    if [ "$kind" = shard ] && [ "$status" -ne 0 ]; then
        echo "FAIL: docs/language.md:$line: this program does not compile (exit $status, shardc ${args[*]}):"
        show "$line" "$f" "$out"
        fail=1
    elif [ "$kind" = shard-error ]; then
        if [ -z "$want" ]; then
            echo "FAIL: docs/language.md:$line: a shard-error block needs an '# error: TEXT' line"
            fail=1
        elif [ "$status" -ne 1 ] || [[ $out != *"$want"* ]]; then
            echo "FAIL: docs/language.md:$line: expected exit 1 and the error '$want', got exit $status:"
            show "$line" "$f" "$out"
            fail=1
        fi
    fi
done < "$tmp/blocks"
if [ "$nblocks" -eq 0 ]; then
    echo "FAIL: docs/language.md: no shard block found"
    fail=1
fi

# ---- 2. the design's layout table ----

if git -C "$root" rev-parse --is-inside-work-tree > /dev/null 2>&1; then
    git -C "$root" ls-files > "$tmp/tracked"
else # a copy without git: what is on disk
    (cd "$root" && find . -type f ! -path './build*' | sed 's|^\./||') > "$tmp/tracked"
fi

# Prints "LINE PATH" for every `path` in the first cell of the layout rows.
awk '
    /^#+ / { in_layout = ($0 ~ /Layout/) }
    in_layout && /^\|/ {
        cell = $0; sub(/^\|/, "", cell); sub(/\|.*$/, "", cell)
        while (match(cell, /`[^`]+`/)) {
            print NR, substr(cell, RSTART + 1, RLENGTH - 2)
            cell = substr(cell, RSTART + RLENGTH)
        }
    }
' "$design" > "$tmp/named"

if [ ! -s "$tmp/named" ]; then
    echo "FAIL: docs/design.md: no layout table (a 'Layout' section with | rows naming \`paths\`)"
    fail=1
fi
# A path exists when it is tracked, or is a folder holding a tracked file.
awk -v q="'" '
    NR == FNR { tracked[$0] = 1; n = split($0, part, "/"); d = ""
                for (i = 1; i < n; i++) { d = d (i > 1 ? "/" : "") part[i]; folder[d] = 1 }
                next }
    { p = $2; sub(/\/$/, "", p)
      if (!(p in tracked) && !(p in folder))
          printf "FAIL: docs/design.md:%d: the layout table names %s%s%s, which is not in the tree\n", $1, q, $2, q }
' "$tmp/tracked" "$tmp/named" > "$tmp/missing"
if [ -s "$tmp/missing" ]; then
    cat "$tmp/missing"
    fail=1
fi
cut -d' ' -f2 "$tmp/named" | sed 's|/$||; s|/.*||' | sort -u > "$tmp/named_top"
grep / "$tmp/tracked" | sed 's|/.*||' | sort -u > "$tmp/top"
for dir in $(comm -23 "$tmp/top" "$tmp/named_top"); do
    echo "FAIL: docs/design.md: the layout table does not name the folder '$dir/'"
    fail=1
done

if [ "$fail" -ne 0 ]; then
    exit 1
fi
echo "PASS: $nblocks programs of docs/language.md; $(wc -l < "$tmp/named") paths of the layout in docs/design.md"
