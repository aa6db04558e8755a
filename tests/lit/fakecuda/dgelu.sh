# In a 16-bit model, the MLP's backward gelu_grad(pre, dy @ w2^T) runs in
# the data-gradient matmul's epilogue, cuBLASLt's DGELU reading pre (which
# the forward's GELU_AUX stored) as its GELU input matrix: no kernel of
# gelu_grad, the bias gradient's sum one column kernel over the 1024 rows
# reading what the matmul wrote (fuse.c's dgelu_step, combine.c's
# stored_apart). On the pretend cuBLASLt the
# call's GELU input matrix is checked (its leading dim set, a multiple of
# 8, inside one allocation, sharing no byte with D). Where the heuristic
# has no algorithm for the epilogue (FAKECUDA_NO_AUX), the matmul runs
# plain and the runtime's own gelu_grad kernel (runtime/cuda/cuda_src.h,
# compiled by NVRTC at its first use) runs after it, in place: one launch
# more a layer, said once on stderr. An f32 model keeps its gelu_grad in
# a kernel. The small GPT in bf16:
# RUN: sed 's/f32\[/bf16[/g' %S/../../../examples/transformer.sh > %t.bf16.sh
# RUN: %shardc %t.bf16.sh -D L=2 --mesh 1x1 --arch sm_90 --emit fused-ir | FileCheck %s --check-prefix=FUSED
# FUSED: // kernel k{{[0-9]+}}_matmul_add_gelu: {{.*}} stores [[PRE0:%[0-9]+]], {{%[0-9]+}}
# FUSED: // kernel k{{[0-9]+}}_matmul_add_gelu: {{.*}} stores [[PRE1:%[0-9]+]], {{%[0-9]+}}
# FUSED: // kernel k{{[0-9]+}}_matmul_gelu_grad: matmul [8, 128, 256] x [1024, 256], epilogue gelu_grad, its operand read (aux) (cuBLASLt); reads {{%[0-9]+}}, %layers.1.mlp.w2, [[PRE1]]; stores [[DG1:%[0-9]+]]
# FUSED: [[DG1]] = gelu_grad [[PRE1]], {{%[0-9]+}} {{.*}}_matmul_gelu_grad, stored
# FUSED-NEXT: [[R1:%[0-9]+]] = reshape [[DG1]] {shape = [1024, 1024]}
# FUSED-NEXT: // kernel k{{[0-9]+}}_sum: sum over axis 0 of [1024, 1024]; reads [[R1]]
# FUSED: // kernel k{{[0-9]+}}_matmul_gelu_grad: {{.*}}reads {{%[0-9]+}}, %layers.0.mlp.w2, [[PRE0]]; stores
# FUSED-NOT: gelu_grad_sum
# RUN: %shardc %S/../../../examples/transformer.sh -D L=2 --mesh 1x1 --arch sm_90 --emit fused-ir | FileCheck %s --check-prefix=F32
# F32-NOT: epilogue gelu_grad
# F32: _gelu_grad_sum: sum over axis 0
# RUN: %shardc %t.bf16.sh -D L=2 --mesh 1x1 --arch sm_90 -o %t.plan
# RUN: %shardc %t.bf16.sh -D L=2 --mesh 1x1 --arch sm_90 --emit schedule > %t.sched
# RUN: python3 %S/steps.py --schedule %t.sched %t.plan > %t.1
# RUN: FileCheck %s --check-prefix=ONE < %t.1
# ONE: schedule: [[#K:]] kernels, [[#M:]] cuBLASLt matmuls
# ONE: per step: cuLaunchKernel [[#L:]]
# ONE: per step: cublasLtMatmul [[#M]]
# ONE: at exit: errors 0
# The epilogue refused: two launches more a step (one a layer), and the
# forward's GELU_AUX two calls more (lit/fakecuda/gelu-aux.sh).
# RUN: env FAKECUDA_NO_AUX=1 python3 %S/steps.py --schedule %t.sched %t.plan > %t.2
# RUN: cat %t.1 %t.2 | FileCheck %s --check-prefix=TWO
# TWO: per step: cuLaunchKernel [[#L:]]
# TWO: per step: cuLaunchKernel [[#L+2]]
# TWO: at exit: errors 0
# RUN: env LD_LIBRARY_PATH=$FAKECUDA FAKECUDA_NO_AUX=1 %shardrun %t.plan --backend cuda --quiet --steps 2 2>&1 | FileCheck %s --check-prefix=SAID
# SAID: shardrun: cuBLASLt has no algorithm for a matmul (M 1024, N 1024, K 256) with its gelu's gradient (EPILOGUE_DGELU): it runs plain, then a kernel of the gradient
# SAID-NOT: EPILOGUE_DGELU
