#!/usr/bin/env bash
# run.sh N SEED: differential testing of N generated programs from SEED
# (tests/diff/README.md). Each is compiled for its mesh and for the mesh of
# ones (or unpipelined), run on the CPU backend from the same seed and
# inputs, and compared; failures are reduced into build/diff-failures/.
# SHARDC and SHARDRUN name the tools (default build/shardc, build/shardrun);
# DIFF_JOBS the parallel checks (default: the cores); DIFF_EMULATE names
# build/tests/test_kernel_emulate to run every kernel against the CPU
# backend too; DIFF_FAKECUDA names build/tests/fakecuda to run every
# plan's cuda backend on the pretend driver too (with DIFF_NCCL, a
# launcher, `--comm nccl` as MPI jobs on the pretend NCCL); DIFF_AVOID constructs
# the generator leaves out (gen.py --help).
set -euo pipefail
if [ $# -ne 2 ]; then
    echo "usage: run.sh N SEED" >&2
    exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
exec python3 "$here/soak.py" "$1" "$2" --jobs "${DIFF_JOBS:-$(nproc 2> /dev/null || echo 2)}"
