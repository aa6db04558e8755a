# The cuda backend when the driver or cuBLASLt fails, on the pretend
# driver of tests/fakecuda (FAKECUDA_FAIL=NAME:K fails the K-th call of
# NAME): the run stops with exit 5 and a message naming what failed, the
# rank, and the instruction or kernel module where there is one; every
# allocation, stream, module, graph and cuBLASLt object is released, and
# no rule of the driver is broken on the way out (no-leaks.awk reads the
# driver's count at exit). The backend's source line in a message is named
# from the repository's root (runtime/exec/cuda.c:N), not from the folder
# shardrun was built in. A plan too big for the GPU says so with the
# arena's size and the GPU's free memory; the page-locked memory for the
# inputs that cannot be had names what it is for and its size. Ranks as threads: one rank's
# failure ends the others' steps too.
# RUN: %shardc %S/../../../examples/mlp.sh --mesh 1x1 --arch sm_90 -o %t.plan
# RUN: %shardc %S/../../../examples/mlp.sh --mesh 2x2 --arch sm_90 -o %t.4.plan
# RUN: %expect 5 env LD_LIBRARY_PATH=$FAKECUDA FAKECUDA_MEMORY=1000000 FAKECUDA_LOG=%t.1 \
# RUN:     %shardrun %t.plan --backend cuda --quiet 2>&1 | FileCheck %s --check-prefix=ARENA
# RUN: awk -f %S/no-leaks.awk %t.1
# ARENA: shardrun: error: rank 0: the plan's arena of {{[0-9.]+}} MiB (shardc --report's peak per rank) does not fit on GPU 0 (976.6 KiB free of 976.6 KiB): cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (out of memory)
# RUN: %expect 5 env LD_LIBRARY_PATH=$FAKECUDA FAKECUDA_FAIL=cuLaunchKernel:3 FAKECUDA_LOG=%t.2 \
# RUN:     %shardrun %t.plan --backend cuda --quiet --steps 2 2>&1 | FileCheck %s --check-prefix=LAUNCH
# RUN: awk -f %S/no-leaks.awk %t.2
# LAUNCH: shardrun: error: rank 0: {{.*}}mlp.sh:{{[0-9]+:[0-9]+}}: instruction {{[0-9]+}} ({{[a-z_]+}}): launching {{[a-z_0-9]+}} (grid {{[0-9]+}}, block {{[0-9]+}}): CUDA_ERROR_UNKNOWN (unknown error)
# RUN: %expect 5 env LD_LIBRARY_PATH=$FAKECUDA FAKECUDA_FAIL=cuModuleLoadDataEx:2 FAKECUDA_LOG=%t.3 \
# RUN:     %shardrun %t.plan --backend cuda --quiet 2>&1 | FileCheck %s --check-prefix=MODULE
# RUN: awk -f %S/no-leaks.awk %t.3
# MODULE: shardrun: error: rank 0: {{.*}}loading kernel module {{[a-z_0-9]+}} (sm_90): CUDA_ERROR_UNKNOWN (unknown error)
# RUN: %expect 5 env LD_LIBRARY_PATH=$FAKECUDA FAKECUDA_FAIL=cublasLtMatmul:7 FAKECUDA_LOG=%t.4 \
# RUN:     %shardrun %t.plan --backend cuda --quiet --steps 2 2>&1 | FileCheck %s --check-prefix=MATMUL
# RUN: awk -f %S/no-leaks.awk %t.4
# MATMUL: shardrun: error: rank 0: {{.*}}mlp.sh:{{[0-9]+:[0-9]+}}: instruction {{[0-9]+}} (matmul): runtime/cuda/cuda_blas.c:{{[0-9]+}}: cublasLtMatmul: CUBLAS_STATUS_EXECUTION_FAILED
# RUN: %expect 5 env LD_LIBRARY_PATH=$FAKECUDA FAKECUDA_FAIL=cuGraphInstantiateWithFlags:1 FAKECUDA_LOG=%t.5 \
# RUN:     %shardrun %t.plan --backend cuda --quiet --steps 3 --graph 2>&1 | FileCheck %s --check-prefix=INSTANTIATE
# RUN: awk -f %S/no-leaks.awk %t.5
# INSTANTIATE: shardrun: error: rank 0: capturing instructions {{[0-9]+}}..{{[0-9]+}} as a CUDA graph: runtime/exec/cuda.c:{{[0-9]+}}: cuGraphInstantiate: CUDA_ERROR_UNKNOWN (unknown error)
# RUN: %expect 5 env LD_LIBRARY_PATH=$FAKECUDA FAKECUDA_FAIL=cuStreamEndCapture:1 FAKECUDA_LOG=%t.6 \
# RUN:     %shardrun %t.plan --backend cuda --quiet --steps 3 --graph 2>&1 | FileCheck %s --check-prefix=CAPTURE
# RUN: awk -f %S/no-leaks.awk %t.6
# CAPTURE: shardrun: error: rank 0: capturing instructions {{[0-9]+}}..{{[0-9]+}} as a CUDA graph: runtime/exec/cuda.c:{{[0-9]+}}: cuStreamEndCapture: CUDA_ERROR_UNKNOWN (unknown error)
# RUN: %expect 5 env LD_LIBRARY_PATH=$FAKECUDA FAKECUDA_FAIL=cuGraphLaunch:2 FAKECUDA_LOG=%t.7 \
# RUN:     %shardrun %t.plan --backend cuda --quiet --steps 3 --graph 2>&1 | FileCheck %s --check-prefix=GRAPH
# RUN: awk -f %S/no-leaks.awk %t.7
# GRAPH: shardrun: error: rank 0: launching the graph of instructions {{[0-9]+}}..{{[0-9]+}}: runtime/exec/cuda.c:{{[0-9]+}}: cuGraphLaunch: CUDA_ERROR_UNKNOWN (unknown error)
# RUN: python3 %S/../../tools/make_batches.py %t.in 2 x=F32[64,1024] y=F32[64,1024]
# RUN: %expect 5 env LD_LIBRARY_PATH=$FAKECUDA FAKECUDA_FAIL=cuMemAllocHost_v2:1:2 FAKECUDA_LOG=%t.9 \
# RUN:     %shardrun %t.plan --backend cuda --quiet --steps 2 --inputs %t.in 2>&1 | FileCheck %s --check-prefix=PINNED
# RUN: awk -f %S/no-leaks.awk %t.9
# PINNED: shardrun: error: rank 0: {{.*}}mlp.sh:{{[0-9]+:[0-9]+}}: instruction {{[0-9]+}} (input): page-locked host memory for the stage's inputs (524288 bytes): runtime/exec/cuda.c:{{[0-9]+}}: cuMemAllocHost: CUDA_ERROR_OUT_OF_MEMORY (out of memory)
# RUN: %expect 5 env LD_LIBRARY_PATH=$FAKECUDA FAKECUDA_FAIL=cuMemAlloc_v2:3 FAKECUDA_LOG=%t.8 \
# RUN:     %shardrun %t.4.plan --backend cuda --quiet --steps 2 2>&1 | FileCheck %s --check-prefix=RANK
# RUN: awk -f %S/no-leaks.awk %t.8
# RANK: shardrun: error: rank {{[0-3]}}: the plan's arena of {{[0-9.]+}} MiB (shardc --report's peak per rank) does not fit on GPU 0 ({{.*}} free of 80.00 GiB): cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (out of memory)
# RANK-NOT: error
