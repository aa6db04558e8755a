# shardrun --comm nccl --backend cuda on a machine without a usable CUDA
# driver: one line saying so, exit 4 (no GPU), before MPI or NCCL is
# touched; with the toolkit's stub libcuda.so as libcuda.so.1 the same, with
# the stub's error. Skipped where a driver is installed (tests/gpu/run.sh
# runs NCCL there).
# RUN: if ldconfig -p | grep -q 'libcuda\.so\.1 ' || [ -e /dev/nvidiactl ]; then echo "skipped: a CUDA driver is installed (tests/gpu/run.sh tests NCCL)"; exit 77; fi
# RUN: %shardc %S/embed.model --mesh 2 -o %t.plan
# RUN: %expect 4 %shardrun %t.plan --backend cuda --comm nccl 2>&1 | FileCheck %s
# RUN: %expect 4 %shardrun %t.plan --backend cuda --comm nccl --timeout 5 2>&1 | FileCheck %s
# RUN: if [ -n "$SHARDC_CUDA_STUB" ]; then mkdir -p %t.lib && ln -sf "$SHARDC_CUDA_STUB" %t.lib/libcuda.so.1 && LD_LIBRARY_PATH=%t.lib %expect 4 %shardrun %t.plan --backend cuda --comm nccl 2>&1 | FileCheck %s --check-prefix=STUB; fi
# CHECK: shardrun: error: --backend cuda: no usable CUDA driver: cannot load libcuda.so.1: {{.*}}No such file or directory
# CHECK-NOT: {{.}}
# STUB: shardrun: error: --backend cuda: no usable CUDA driver: cuInit failed: CUDA_ERROR_STUB_LIBRARY (the CUDA driver is a stub library, not a driver)
# STUB-NOT: {{.}}
