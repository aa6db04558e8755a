# A layernorm's bias gradient is summed in its gain gradient's kernel (a
# sibling sum: passes/fuse.c's join_siblings) under data parallelism too:
# its partial sum's insert into the gradient bucket (the all-reduce the
# partitioner put right after it) moves to after the gain's sum
# (passes/siblings.c), where the kernel stores both. The one-layer GPT on
# 2x2, its three layernorms (lnf's, the MLP's, and the attention's, whose
# dy is the adds of q's, k's and v's input gradients, summed over the
# merged rows for it: passes/combine.c's stored_apart).
# (With norm_cols.c off: by default each layernorm's row kernel makes
# both sums' partial rows, lit/cuda/norm-cols.sh, and no sibling is left.)
# RUN: env SHARDC_EXPERIMENT_NORM_COLS=0 %shardc %S/../../../examples/transformer.sh -D L=1 -D S=16 -D D=32 -D NH=2 -D V=64 -D B=4 --mesh 2x2 --arch sm_90 --emit fused-ir | FileCheck %s
# CHECK: // kernel k{{[0-9]+}}_sum_sub_mul: sum over axis 0 of [32, 32] with a sibling sum; reads [[DY:%[0-9]+]], {{.*}}; stores [[B:%[0-9]+]], [[G:%[0-9]+]]
# CHECK-NEXT: [[B]] = sum [[DY]] {axis = 0, keepdims = false} : f32[32] auto(_) partial(dp)
# CHECK: [[G]] = sum {{.*}} partial(dp) phase backward  // k{{[0-9]+}}_sum_sub_mul, stored
# CHECK-NEXT: = insert %{{[0-9]+}}, [[B]] {offset
# CHECK-NEXT: = insert %{{[0-9]+}}, [[G]] {offset
# CHECK-COUNT-2: _sum_sub_mul: sum over axis 0 of [32, 32] with a sibling sum
# CHECK-NOT: _sub_mul_sum: sum over axis 0 of [32, 32]
# CHECK-NOT: // kernel k{{[0-9]+}}_sum: sum over axis 0 of [32, 32]
# On the GPT of pipeline.sh, split over 2 stages: each microbatch's
# layernorm gradients likewise, the bias's sum over the microbatch's 256
# merged rows (2 sequences of 128: passes/combine.c's rows rule on each
# stage) beside the gain's (4 microbatches, 2 layernorms a stage, and
# lnf's): the attention's too, whose dy (the adds of q's, k's and v's
# input gradients) another kernel stores, so both sums read it from
# memory.
# RUN: %shardc %S/../../../examples/pipeline.sh -D L=2 --mesh 1x2x1 --arch sm_90 --emit fused-ir | FileCheck %s --check-prefix=PIPE
# PIPE-COUNT-20: _sum_sub_mul: sum over axis 0 of [256, 256] with a sibling sum
# PIPE-NOT: _sum_sub_mul: sum over axis 0 of [256, 256];
# PIPE-NOT: _sub_mul_sum: sum over axis 0 of [2, 128, 256]
