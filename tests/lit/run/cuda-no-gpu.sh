# shardrun --backend cuda on a machine without a CUDA driver: one line
# saying so, exit 4 (no GPU), before the plan is even read (a missing plan
# file is not what it reports). Skipped where a driver is installed (the
# GPU tests are tests/gpu/run.sh there).
# RUN: if ldconfig -p | grep -q 'libcuda\.so\.1 ' || [ -e /dev/nvidiactl ]; then echo "skipped: a CUDA driver is installed (tests/gpu/run.sh tests the backend)"; exit 77; fi
# RUN: %shardc %S/embed.model --mesh 2 -o %t.plan
# RUN: %expect 4 %shardrun %t.plan --backend cuda 2>&1 | FileCheck %s
# RUN: %expect 4 %shardrun %t.missing.plan --backend cuda 2>&1 | FileCheck %s
# RUN: %expect 4 %shardrun %t.plan --backend cuda --comm local --ranks 2 2>&1 | FileCheck %s
# RUN: %shardrun --help | FileCheck %s --check-prefix=HELP
# CHECK: shardrun: error: --backend cuda: no usable CUDA driver: cannot load libcuda.so.1: {{.*}}libcuda.so.1: cannot open shared object file: No such file or directory
# CHECK-NOT: error
# HELP: --backend cpu|cuda
# HELP: 3 internal error, 4 no GPU (--backend cuda without a usable CUDA driver
