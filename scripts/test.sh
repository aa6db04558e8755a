#!/usr/bin/env bash
# test.sh: the whole test suite, as CI runs it (.ci/run), in three stages:
#   1. build/       RelWithDebInfo, warnings as errors; ctest
#   2. build-asan/  Debug (asserts on) with AddressSanitizer and UBSan; ctest
#   3. build-fuzz/  clang-14 and libFuzzer: each fuzz target runs for
#                   FUZZ_SECONDS seconds (default 60; 0 builds them only)
# Ends with "test.sh: all tests passed", or names the stage that failed.
set -euo pipefail
cd "$(dirname "$0")/.."

fuzz_seconds=${FUZZ_SECONDS:-60}
# A fixed seed makes a CI run repeatable: a longer local run with the same
# seed explores everything a CI run will. FUZZ_SEED=0 picks a random one.
fuzz_seed=${FUZZ_SEED:-1}
jobs=$(nproc 2> /dev/null || echo 2)
stage=""
# ctest runs two tests at once, and many of them start several shardrun
# processes (one per rank under MPI): OpenBLAS's default, a thread per
# core in every process, has its idle threads spin on the cores the other
# tests need. With one thread each, the 144 run/, train/ and resume/ tests
# took 140 s against 213 s here in build/, 529 s against 644 s in
# build-asan/ (ctest -j2 on 2 cores; every process of a test runs with
# the same count, so its comparisons hold: OpenBLAS's bits differ between
# one thread and several).
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
trap '[ -z "$stage" ] || echo "test.sh: FAILED at stage: $stage" >&2' EXIT

# configure DIR CMAKE_ARGS...: a new build folder gets Ninja when there is one
# (an existing one keeps the generator it was made with).
configure() {
    local dir=$1 gen=()
    shift
    if [ ! -f "$dir/CMakeCache.txt" ] && command -v ninja > /dev/null; then
        gen=(-G Ninja)
    fi
    cmake -S . -B "$dir" "${gen[@]}" "$@"
}

echo "=== 1. build/: RelWithDebInfo, -Werror"
stage="1. build (build/)"
configure build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSHARDC_WERROR=ON
cmake --build build -j "$jobs"
stage="1. ctest (build/)"
ctest --test-dir build --output-on-failure -j2

# gcc's sanitizer instrumentation sets off false warnings, so -Werror stays
# with stage 1. abort_on_error makes a sanitizer finding a crash rather than
# exit status 1, which tests expecting a user error (exit 1) would accept.
echo "=== 2. build-asan/: AddressSanitizer, UndefinedBehaviorSanitizer"
stage="2. sanitizer build (build-asan/)"
# The differential tests check 80 generated programs here (240 in stage 1):
# each runs four sanitized processes, and stage 1 has checked the results.
# The kernels stage 1's tests compiled come from its NVRTC cache (the same
# sources, so the same keys), and test_cuda_codegen generates its models'
# kernels without compiling them again: NVRTC is not instrumented, and
# stage 1 compiled them all.
configure build-asan -DCMAKE_BUILD_TYPE=Debug -DSHARDC_SANITIZE=ON -DSHARDC_DIFF_PROGRAMS=80 \
    -DSHARDC_NVRTC_CACHE="$PWD/build/nvrtc-cache" -DSHARDC_TEST_CODEGEN_ONLY=ON
cmake --build build-asan -j "$jobs"
stage="2. ctest under sanitizers (build-asan/)"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:abort_on_error=1 \
    ctest --test-dir build-asan --output-on-failure -j2

# The library is built with asserts on (no -DNDEBUG) and optimised.
echo "=== 3. build-fuzz/: libFuzzer, ${fuzz_seconds} s per target"
stage="3. fuzz build (build-fuzz/)"
if ! command -v clang-14 > /dev/null; then
    echo "test.sh: clang-14 not found (scripts/setup-debian.sh installs it)" >&2
    exit 1
fi
configure build-fuzz -DCMAKE_C_COMPILER=clang-14 -DSHARDC_FUZZ=ON \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g"
cmake --build build-fuzz -j "$jobs" --target fuzz_frontend fuzz_ir fuzz_plan fuzz_safetensors \
    fuzz_checkpoint
artifacts=build-fuzz/artifacts
rm -rf "$artifacts"
mkdir -p "$artifacts"
for target in frontend ir plan safetensors checkpoint; do
    [ "$fuzz_seconds" -gt 0 ] || break
    stage="3. fuzzing $target (log: build-fuzz/fuzz_$target.log)"
    # New inputs go to the first folder, a copy of the seeds; the others
    # are read only.
    corpus=build-fuzz/corpus/$target
    mkdir -p "$corpus"
    cp -r "tests/fuzz/corpus/$target/." "$corpus/"
    seeds=""
    case $target in frontend | ir) seeds="examples tests/lit" ;; esac
    log=build-fuzz/fuzz_$target.log
    status=0
    "build-fuzz/tests/fuzz_$target" -seed="$fuzz_seed" -max_total_time="$fuzz_seconds" -timeout=10 \
        -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$artifacts/$target-" \
        "$corpus" $seeds > "$log" 2>&1 || status=$?
    found=$(find "$artifacts" -name "$target-crash-*" -o -name "$target-leak-*" \
                 -o -name "$target-timeout-*" -o -name "$target-oom-*")
    if [ "$status" -ne 0 ] || [ -n "$found" ]; then
        tail -n 60 "$log" >&2
        echo "test.sh: fuzz_$target failed (exit $status); findings:" $found >&2
        exit 1
    fi
    grep -E '^Done [0-9]+ runs' "$log" || tail -n 1 "$log"
done

stage=""
echo "test.sh: all tests passed"
