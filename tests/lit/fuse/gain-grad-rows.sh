# A layernorm's gain gradient, sum(dy * (x - mean) * rstd) over the batch
# and the sequence, is one column kernel over the rank's 32 local rows
# ([2, 16] merged) with the sub and the muls in front of the sum: the
# rows rule makes them again over the merged rows (passes/combine.c's
# merge_operand), where the sum over the batch had been a kernel of its own
# storing [16, 32] and the sum over the sequence another. All three
# layernorms of the one-layer GPT on 2x2. A bias's gradient through
# gelu_grad, which the weight's gradient reads too, stays two sums: its
# kernel sums the gradient over the batch as it stores it.
# RUN: %shardc %S/../../../examples/transformer.sh -D L=1 -D S=16 -D D=32 -D NH=2 -D V=64 -D B=4 --mesh 2x2 --arch sm_90 --emit fused-ir | FileCheck %s
# CHECK-COUNT-3: // kernel k{{[0-9]+}}_sub_mul_sum: sum over axis 0 of [32, 32]; reads
# CHECK-NOT: // kernel k{{[0-9]+}}_sub_mul_sum
# RUN: %shardc %S/../../../examples/transformer.sh -D L=1 -D S=16 -D D=32 -D NH=2 -D V=64 -D B=4 --mesh 2x2 --arch sm_90 --emit fused-ir | FileCheck %s --check-prefix=GELU
# GELU: _gelu_grad_sum: sum over axis 0 of [2, 16, 64]; reads
# GELU-NEXT: gelu_grad
# GELU-NEXT: sum {{.*}} : f32[16, 64]
# GELU: _sum: sum over axis 0 of [16, 64]; reads
