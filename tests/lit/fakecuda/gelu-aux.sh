# In a 16-bit model, a gelu after a matmul whose operand the backward
# reads too (the MLP's gelu(h @ w1 + b1), read again by gelu_grad) runs in
# the matmul's epilogue, cuBLASLt's GELU_AUX_BIAS storing the operand as
# its GELU input matrix: one cuBLASLt call a layer and no gelu kernel in
# the forward (fuse.c's gelu_first). The [8, 128, 256] activations times
# one [256, 1024] matrix are one matmul of 1024 rows (cuda_blas.c's
# plan_mm), not a batch of 8. On the pretend cuBLASLt the call's GELU input
# matrix is checked (its leading dim set, a multiple of 8, inside one
# allocation, sharing no byte with A, B, C or D). Where the heuristic has
# no algorithm for the epilogue (FAKECUDA_NO_AUX), the matmul runs twice,
# its sum into the operand's buffer and then with the gelu (one more
# cuBLASLt call a layer), said once on stderr. An f32 model keeps its gelu
# apart, with or without f32 matmuls of bf16 parts. The small GPT in bf16:
# RUN: sed 's/f32\[/bf16[/g' %S/../../../examples/transformer.sh > %t.bf16.sh
# RUN: %shardc %t.bf16.sh -D L=2 --mesh 1x1 --arch sm_90 --emit fused-ir | FileCheck %s --check-prefix=FUSED
# FUSED: // kernel k{{[0-9]+}}_matmul_add_gelu: matmul [8, 128, 256] x [256, 1024], epilogue bias, gelu, its operand stored (aux) (cuBLASLt); reads %layers.0.mlp.h, %layers.0.mlp.w1, %layers.0.mlp.b1; stores [[PRE:%[0-9]+]], [[ACT:%[0-9]+]]
# FUSED-NOT: _gelu: elementwise
# FUSED: // kernel k{{[0-9]+}}_matmul_add_gelu: matmul {{.*}}, epilogue bias, gelu, its operand stored (aux) (cuBLASLt); reads %layers.1.mlp.h
# FUSED-NOT: _gelu: elementwise
# FUSED: gelu_grad [[PRE]],
# RUN: %shardc %S/../../../examples/transformer.sh -D L=2 --mesh 1x1 --arch sm_90 --emit fused-ir | FileCheck %s --check-prefix=F32
# RUN: %shardc %S/../../../examples/transformer.sh -D L=2 --mesh 1x1 --arch sm_90 --f32-matmul bf16x3 --emit fused-ir | FileCheck %s --check-prefix=F32
# F32-NOT: its operand stored (aux)
# F32: _gelu: elementwise
# RUN: %shardc %t.bf16.sh -D L=2 --mesh 1x1 --arch sm_90 -o %t.plan
# RUN: %shardc %t.bf16.sh -D L=2 --mesh 1x1 --arch sm_90 --emit schedule > %t.sched
# RUN: python3 %S/steps.py --schedule %t.sched %t.plan > %t.1
# RUN: FileCheck %s --check-prefix=ONE < %t.1
# ONE: schedule: [[#K:]] kernels, [[#M:]] cuBLASLt matmuls
# ONE: per step: cublasLtMatmul [[#M]]
# ONE: at exit: errors 0
# RUN: env FAKECUDA_NO_AUX=1 python3 %S/steps.py --schedule %t.sched %t.plan > %t.2
# RUN: FileCheck %s --check-prefix=TWO < %t.2
# TWO: schedule: [[#K:]] kernels, [[#M:]] cuBLASLt matmuls
# TWO: per step: cublasLtMatmul [[#M+2]]
# TWO: at exit: errors 0
# RUN: env LD_LIBRARY_PATH=$FAKECUDA FAKECUDA_NO_AUX=1 %shardrun %t.plan --backend cuda --quiet --steps 2 2>&1 | FileCheck %s --check-prefix=SAID
# SAID: shardrun: cuBLASLt has no algorithm for a matmul (M 1024, N 1024, K 256) storing its gelu's operand (EPILOGUE_GELU_AUX): it runs twice, once for each result
# SAID-NOT: EPILOGUE_GELU_AUX
