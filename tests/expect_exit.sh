#!/usr/bin/env bash
# expect_exit.sh CODE CMD...: runs CMD (its output passes through) and
# succeeds iff it exited with exactly CODE. lit's `not` only knows
# "non-zero"; the shardc command promises distinct codes (1 input error,
# 2 usage, 3 internal), and the tests hold it to them.
if [ $# -lt 2 ]; then
    echo "usage: expect_exit.sh CODE CMD..." >&2
    exit 2
fi
code=$1
shift
"$@"
got=$?
if [ "$got" -ne "$code" ]; then
    echo "expected exit $code, got $got" >&2
    exit 1
fi
exit 0
