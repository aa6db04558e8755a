# llama.sh's rotary embeddings in elementwise kernels (a concat with its
# branches, the transposes making q and k read in them, dq and dk stored
# transposed back: passes/fuse.c) on the pretend driver of tests/fakecuda,
# which checks every launch as a strict driver would (its pointers inside
# live allocations): per step, one launch per CUDA kernel of the plan plus
# the two inputs' init kernels, eagerly and by graphs; nothing left
# allocated at exit.
# RUN: %shardc %S/../../../examples/llama.sh --mesh 1x1 --arch sm_90 -o %t.plan
# RUN: %shardc %S/../../../examples/llama.sh --mesh 1x1 --arch sm_90 --emit schedule > %t.sched
# RUN: python3 %S/steps.py --schedule %t.sched %t.plan > %t.1
# RUN: FileCheck %s --check-prefix=EAGER < %t.1 && FileCheck %s --check-prefix=EXIT < %t.1
# EAGER: schedule: [[#K:]] kernels, [[#M:]] cuBLASLt matmuls
# EAGER: per step: cuLaunchKernel [[#K+2]]
# EAGER: per step: cublasLtMatmul [[#M]]
# RUN: python3 %S/steps.py %t.plan --graph > %t.1g
# RUN: FileCheck %s --check-prefix=GRAPH < %t.1g && FileCheck %s --check-prefix=EXIT < %t.1g
# GRAPH: per step: cuGraphLaunch 1
# GRAPH: per step: cuLaunchKernel 0
# EXIT: at exit: errors 0
# EXIT-NEXT: at exit: live_allocations 0
# EXIT-NEXT: at exit: live_bytes 0
