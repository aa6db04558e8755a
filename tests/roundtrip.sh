#!/usr/bin/env bash
# roundtrip.sh SHARDC MODEL [ARGS...]: the textual IR round trip of one
# model: compiles MODEL (with ARGS, e.g. --mesh 2x2) to A.ir, compiles A.ir
# to B.ir, and requires the two files to be identical byte for byte.
set -euo pipefail
if [ $# -lt 2 ]; then
    echo "usage: roundtrip.sh SHARDC MODEL [ARGS...]" >&2
    exit 2
fi
shardc=$1
model=$2
shift 2
what="$model${*:+ $*}"
tmp=$(mktemp -d)
trap 'rm -rf -- "$tmp"' EXIT

"$shardc" "$model" "$@" --emit ir -o "$tmp/A.ir"
"$shardc" "$tmp/A.ir" --emit ir -o "$tmp/B.ir"
if ! cmp -s "$tmp/A.ir" "$tmp/B.ir"; then
    echo "roundtrip: $what: the IR read back prints differently:" >&2
    diff -u --label A.ir --label B.ir "$tmp/A.ir" "$tmp/B.ir" >&2 || true
    exit 1
fi
echo "roundtrip: $what: $(wc -l < "$tmp/A.ir") lines of IR read back identically"
