# --explain-sharding of a training step whose gradients share a bucket: the
# bucket's all_reduce is a value the partitioner did not make (the bucket
# pass runs after it), said so; it read past the partitioner's reasons and
# crashed.
# RUN: %shardc %s --mesh 2 --explain-sharding | FileCheck %s
mesh dp
input  x  : f32[8, 4] shard(dp, _)
input  y  : f32[8, 4] shard(dp, _)
param  w1 : f32[4, 8] = normal(0.5)
param  w2 : f32[8, 4] = normal(0.5)
loss = mse(gelu(x @ w1) @ w2, y)
output loss
train loss with sgd(lr = 0.01)
# CHECK: # collectives and slices of the partitioned program (per rank)
# CHECK-NEXT: all_reduce over dp (line 11, 4 bytes per rank): %loss () partial(dp) -> () for mse
# CHECK-NEXT: all_reduce over dp (line 11, 256 bytes per rank): a bucket of gradients, synchronised in one collective (--bucket-mb)
# CHECK-NOT: {{.}}
