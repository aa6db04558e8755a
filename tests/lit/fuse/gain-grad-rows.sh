# A layernorm's gain gradient, sum(dy * (x - mean) * rstd) over the batch
# and the sequence, is one column kernel over the rank's 32 local rows
# ([2, 16] merged) with the sub and the muls in front of the sum: the
# rows rule makes them again over the merged rows (passes/combine.c's
# merge_operand), where the sum over the batch had been a kernel of its own
# storing [16, 32] and the sum over the sequence another. All three
# layernorms of the one-layer GPT on 2x2, each with its bias's gradient
# beside it (a sibling sum: lit/fuse/sibling-dp.sh). A bias's gradient through
# gelu_grad, which the weight's gradient reads too, stays two sums in f32:
# gelu_grad's kernel sums the gradient over the batch as it stores it. In
# bf16 the matmul's epilogue makes the gradient (cuBLASLt's DGELU), so
# one sum over the merged rows reads it back (passes/combine.c's
# stored_apart).
# (With norm_cols.c off: by default the 32 rows are 2 runs of 16 whose
# partial sums the layernorms' row kernels make, lit/cuda/norm-cols.sh.)
# RUN: env SHARDC_EXPERIMENT_NORM_COLS=0 %shardc %S/../../../examples/transformer.sh -D L=1 -D S=16 -D D=32 -D NH=2 -D V=64 -D B=4 --mesh 2x2 --arch sm_90 --emit fused-ir | FileCheck %s
# CHECK-COUNT-3: // kernel k{{[0-9]+}}_sum_sub_mul: sum over axis 0 of [32, 32] with a sibling sum; reads
# CHECK-NOT: // kernel k{{[0-9]+}}_{{(sum_)?}}sub_mul
# RUN: %shardc %S/../../../examples/transformer.sh -D L=1 -D S=16 -D D=32 -D NH=2 -D V=64 -D B=4 --mesh 2x2 --arch sm_90 --emit fused-ir | FileCheck %s --check-prefix=GELU
# GELU: _gelu_grad_sum: sum over axis 0 of [2, 16, 64]; reads
# GELU-NEXT: gelu_grad
# GELU-NEXT: sum {{.*}} : f32[16, 64]
# GELU: _sum: sum over axis 0 of [16, 64]; reads
# RUN: sed 's/f32\[/bf16[/g' %S/../../../examples/transformer.sh > %t.bf16.sh
# RUN: %shardc %t.bf16.sh -D L=1 -D S=16 -D D=32 -D NH=2 -D V=64 -D B=4 --mesh 2x2 --arch sm_90 --emit fused-ir | FileCheck %s --check-prefix=DGELU
# DGELU: _matmul_gelu_grad: matmul
# DGELU: [[G:%[0-9]+]] = gelu_grad {{.*}}_matmul_gelu_grad, stored
# DGELU-NEXT: [[R:%[0-9]+]] = reshape [[G]] {shape = [32, 64]}
# DGELU-NEXT: // kernel k{{[0-9]+}}_sum: sum over axis 0 of [32, 64]; reads [[R]]; stores
# DGELU-NOT: sum over axis 0 of [16, 64]
# A residual's gradient that a layernorm's row kernel stores (its
# layernorm_dx and the add after it), which the weight's gradient reads
# too: one sum over the 1024 merged rows reads it back, where a sum over
# the batch and one over the sequence had each been a kernel (the row
# kernel sums nothing over the batch). The small GPT in f32 on one GPU,
# layer 0's MLP bias (norm_cols.c off, as above):
# RUN: env SHARDC_EXPERIMENT_NORM_COLS=0 %shardc %S/../../../examples/transformer.sh -D L=2 --mesh 1x1 --arch sm_90 --emit fused-ir | FileCheck %s --check-prefix=ROW
# ROW: // kernel k{{[0-9]+}}_layernorm_dx_add: {{.*}}; stores %{{[0-9]+}}
# ROW: // kernel k{{[0-9]+}}_layernorm_dx_add: {{.*}}; stores [[X:%[0-9]+]]
# ROW-NEXT: = layernorm_dx
# ROW-NEXT: [[X]] = add
# ROW-NEXT: [[R:%[0-9]+]] = reshape [[X]] {shape = [1024, 256]}
# ROW-NEXT: // kernel k{{[0-9]+}}_sum: sum over axis 0 of [1024, 256]; reads [[R]]
# The adds of q's, k's and v's input gradients, a layernorm's dy, are
# summed over the merged rows too, beside the gain's gradient in its kernel
# (a sibling sum): their own kernel sums nothing (stored_apart's dy).
# ROW: // kernel k{{[0-9]+}}_sum_sub_mul: sum over axis 0 of [1024, 256] with a sibling sum
# ROW-NOT: _add_sum: sum over axis 0 of [8, 128, 256]
# ROW-NOT: sum over axis 0 of [128, 256]
