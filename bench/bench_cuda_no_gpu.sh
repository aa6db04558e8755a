#!/usr/bin/env bash
# bench_cuda_no_gpu.sh BENCH_CUDA STUBDIR: bench_cuda with STUBDIR (the
# CUDA toolkit's stub libcuda.so as libcuda.so.1) first on the library
# path, so cuInit fails on any machine: it must print one line, "skipped:
# no GPU (no usable CUDA driver: ...)", and exit 77 before compiling
# anything or writing any file (a --calibrate profile that exists is left
# as it was). Also a usage error: exit 2.
bench=$1 stub=$2
profile=$(mktemp --suffix=.json)
trap 'rm -f "$profile"' EXIT
echo '{"kept": true}' > "$profile"
out=$(LD_LIBRARY_PATH="$stub" "$bench" --out /nonexistent/dir/report.md --calibrate "$profile" 2>&1)
rc=$?
echo "$out"
if [ "$rc" -ne 77 ]; then
    echo "expected exit 77, got $rc" >&2
    exit 1
fi
case $out in
"skipped: no GPU (no usable CUDA driver: cuInit failed: CUDA_ERROR_STUB_LIBRARY"*) ;;
*)
    echo "expected \"skipped: no GPU (no usable CUDA driver: cuInit failed: ...)\"" >&2
    exit 1
    ;;
esac
if [ "$(printf '%s\n' "$out" | wc -l)" -ne 1 ]; then
    echo "expected one line" >&2
    exit 1
fi
if [ "$(cat "$profile")" != '{"kept": true}' ] || ls "$profile".tmp.* > /dev/null 2>&1; then
    echo "--calibrate: the profile was touched, or a temporary file was left" >&2
    exit 1
fi
"$bench" --repeat 0 >/dev/null 2>&1
rc=$?
if [ "$rc" -ne 2 ]; then
    echo "--repeat 0: expected exit 2 (usage), got $rc" >&2
    exit 1
fi
echo "ok"
