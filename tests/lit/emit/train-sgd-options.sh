# sgd with momentum and weight decay; options may use let constants and
# may come in any order.
# RUN: %shardc %s --mesh 2x2 --emit ir | FileCheck %s
mesh dp, tp
let B = 8
input x : f32[B, 16] shard(dp, _)
input labels : i32[B] shard(dp)
param w : f32[16, 32] shard(_, tp) = normal(0.02)
loss = cross_entropy(x @ w, labels)
output loss
train loss with sgd(wd = 0.0001, momentum = 0.9,
                    lr = 1 / B)
# CHECK: {{^}}%loss = cross_entropy {{%[0-9]+}}, %labels : f32[]{{$}}
# CHECK: {{^}}train %loss with sgd(lr = 0.125, momentum = 0.9, wd = 0.0001){{$}}
