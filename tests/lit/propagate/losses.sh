# Losses: scalar results; operands line up backward; over a dp-split batch
# the local loss is partial, resolved by an all_reduce of one element.
# RUN: %shardc %s --mesh 2x2 --explain-sharding | FileCheck %s
mesh dp, tp
input  logits : f32[8, 10] shard(dp, _)
input  labels : i32[8]
input  pred : f32[8, 4]
input  target : f32[8, 4] shard(dp, _)
l1 = cross_entropy(logits, labels)
l2 = mse(pred, target)
output l1, l2
# CHECK: # shardings of the logical program
# CHECK-NEXT: %logits = shard(dp, _)  # annotation
# CHECK-NEXT: %labels = auto(dp)  # backward from %logits through cross_entropy (operand labels)
# CHECK-NEXT: %pred = auto(dp, _)  # backward from %target through mse (operand pred)
# CHECK-NEXT: %target = shard(dp, _)  # annotation
# CHECK-NEXT: %l1 = auto()  # forward from %logits through cross_entropy
# CHECK-NEXT: %l2 = auto()  # forward from %target through mse
# CHECK-NEXT: # collectives and slices of the partitioned program (per rank)
# CHECK-NEXT: all_reduce over dp (line 9, 4 bytes per rank): %l1 () partial(dp) -> () for cross_entropy (the result's sharding, by: forward from %logits through cross_entropy)
# CHECK-NEXT: all_reduce over dp (line 10, 4 bytes per rank): %l2 () partial(dp) -> () for mse (the result's sharding, by: forward from %target through mse)
