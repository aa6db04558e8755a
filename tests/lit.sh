#!/usr/bin/env bash
# lit.sh FILE: runs the RUN: lines of one test file, in the manner of LLVM's
# lit. A test file holds its own commands (`# RUN: ...` in .sh files,
# `// RUN: ...` in .ir files; a line ending in `\` continues on the next RUN:
# line) and usually FileCheck lines that check their output.
#
# Substitutions: %shardc, %shardrun, %mpirun (with its flags), %FileCheck (and the bare word FileCheck), %not (and
# `not` at the start of a command), %expect, %s (this file), %S (its folder),
# %t (a temporary path, removed afterwards). The programs come from the
# environment: SHARDC, SHARDRUN, MPIRUN, MPIRUN_FLAGS, FILECHECK, NOT, EXPECT
# (tests/expect_exit.sh).
#
# Exits non-zero at the first failing RUN line, after printing the expanded
# command and its output, and when the file has no RUN line. A RUN line that
# exits 77 skips the rest of the test, which exits 77 (ctest: skipped) after
# printing the line's output ("skipped: no GPU").
set -uo pipefail
shopt -u patsub_replacement 2>/dev/null || true # '&' in paths stays literal

if [ $# -ne 1 ]; then
    echo "usage: lit.sh FILE" >&2
    exit 2
fi
: "${SHARDC:?lit.sh: set SHARDC}" "${FILECHECK:?lit.sh: set FILECHECK}"
: "${NOT:?lit.sh: set NOT}" "${EXPECT:?lit.sh: set EXPECT}"
file=$(realpath -- "$1") || exit 1
tmp=$(mktemp -d) || exit 1
trap 'rm -rf -- "$tmp"' EXIT

# The RUN: commands, continuation lines joined, each prefixed "LINENO:".
run_lines() {
    local n=0 start=0 cmd="" line
    while IFS= read -r line || [ -n "$line" ]; do
        n=$((n + 1))
        [[ $line == *RUN:* ]] || continue
        line=${line#*RUN:}
        line=${line#"${line%%[![:space:]]*}"} # leading blanks
        [ -n "$cmd" ] || start=$n
        if [[ $line =~ ^(.*)\\[[:space:]]*$ ]]; then
            cmd+="${BASH_REMATCH[1]} "
            continue
        fi
        printf '%s:%s\n' "$start" "$cmd$line"
        cmd=""
    done < "$file"
    [ -z "$cmd" ] || printf '%s:%s\n' "$start" "$cmd"
}

# Expands the substitutions in one command.
expand() {
    local c
    # Bare words first become their %-forms, so one table handles both.
    c=$(sed -E -e 's/(^|[^%[:alnum:]_-])FileCheck([^[:alnum:]_-]|$)/\1%FileCheck\2/g' \
               -e 's/(^|[|;&(]|\|\||&&)([[:space:]]*)not([[:space:]])/\1\2%not\3/g' <<< "$1")
    c=${c//%shardc/$(printf '%q' "$SHARDC")}
    c=${c//%shardrun/$(printf '%q' "${SHARDRUN:-shardrun-not-built}")}
    c=${c//%mpirun/${MPIRUN:-mpirun-not-found} ${MPIRUN_FLAGS:-}}
    c=${c//%FileCheck/$(printf '%q' "$FILECHECK")}
    c=${c//%expect/$(printf '%q' "$EXPECT")}
    c=${c//%not/$(printf '%q' "$NOT")}
    c=${c//%s/$(printf '%q' "$file")}
    c=${c//%S/$(printf '%q' "$(dirname -- "$file")")}
    c=${c//%t/$(printf '%q' "$tmp/t")}
    printf '%s' "$c"
}

count=0
while IFS= read -r entry; do
    lineno=${entry%%:*}
    cmd=$(expand "${entry#*:}")
    count=$((count + 1))
    # stdin from /dev/null: a command that reads it (mpirun does) would
    # otherwise eat the RUN lines still to come
    out=$(cd "$tmp" && bash -o pipefail -c "$cmd" 2>&1 < /dev/null)
    status=$?
    if [ "$status" -eq 77 ]; then
        echo "SKIP: $1:$lineno: $out"
        exit 77
    fi
    if [ "$status" -ne 0 ]; then
        echo "FAIL: $1:$lineno: RUN line failed (exit $status):"
        echo "  $cmd"
        echo "--- output ---"
        printf '%s\n' "$out"
        exit 1
    fi
done < <(run_lines)

if [ "$count" -eq 0 ]; then
    echo "FAIL: $1: no RUN line"
    exit 1
fi
echo "PASS: $1 ($count RUN line(s))"
