# Matmul and batched matmul: batch and M from a, N from b; a row-split
# weight pulls its input's K dim backward; a split contraction gives a
# partial result, resolved by all_reduce.
# RUN: %shardc %s --mesh 2x2 --explain-sharding | FileCheck %s
mesh dp, tp
input  a : f32[4, 8, 16] shard(dp, _, _)
param  w : f32[16, 32] shard(_, tp) = zeros
param  w2 : f32[32, 16] shard(tp, _) = zeros
input  h : f32[4, 8, 32]
y = a @ w
z = h @ w2
output y, z
# CHECK: # shardings of the logical program
# CHECK-NEXT: %a = shard(dp, _, _)  # annotation
# CHECK-NEXT: %w = shard(_, tp)  # annotation
# CHECK-NEXT: %w2 = shard(tp, _)  # annotation
# CHECK-NEXT: %h = auto(_, _, tp)  # backward from %z through matmul (operand a); K dim from %w2
# CHECK-NEXT: %y = auto(dp, _, tp)  # forward from %a and %w through matmul
# CHECK-NEXT: %z = auto(_, _, _)  # forward from %w2 through matmul
# CHECK-NEXT: # collectives and slices of the partitioned program (per rank)
# CHECK-NEXT: all_reduce over tp (line 11, 2048 bytes per rank): %z (_, _, _) partial(tp) -> (_, _, _) for matmul (the result's sharding, by: forward from %w2 through matmul; contracting the dim split over tp, the product partial: 2048 bytes per rank, against 3072 and 2x the multiply-adds for contracting the dim whole)
