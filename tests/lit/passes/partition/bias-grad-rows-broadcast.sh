# The rows rule through elementwise ops (passes/combine.c's
# merge_operand) makes an op again over the merged rows only where each
# operand has both rows' dims or neither: b's gradient here sums
# dy * p over the batch and the sequence, and p [6, 8] varies along the
# sequence but not the batch, so no reshape of it stands for the merged
# rows ([12, 8] against [6, 8] does not broadcast), and the sums stay two.
# RUN: %shardc %s --mesh 2 --emit sharded-ir | FileCheck %s
# CHECK: %[[G:[0-9]+]] = mul %{{[0-9]+}}, %p : f32[2, 6, 8] auto(dp, _, _) phase backward
# CHECK: %[[S:[0-9]+]] = sum %[[G]] {axis = 0, keepdims = false} : f32[6, 8] auto(_, _) partial(dp) phase backward
# CHECK-NEXT: sum %[[S]] {axis = 0, keepdims = false} : f32[8] auto(_) partial(dp) phase backward
# CHECK-NOT: f32[12, 8]
mesh dp
input x : f32[4, 6, 8] shard(dp, _, _)
param p : f32[6, 8] = normal(1.0)
param b : f32[8] = zeros
y = (x + b) * p
loss = mean(y * y)
train loss with sgd(lr = 0.1)
