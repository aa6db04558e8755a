# ZeRO stage 1 with sgd, over the second axis.
# RUN: %shardc %s --mesh 2x2 --emit ir | FileCheck %s
mesh dp, tp
input x : f32[8, 16] shard(dp, _)
param w : f32[16, 16] = zeros
loss = mean(x @ w)
train loss with sgd(lr = 0.5) zero 1 over tp
# CHECK: {{^}}%loss = mean {{%[0-9]+}} {axis = 0, keepdims = false} : f32[]{{$}}
# CHECK-NEXT: {{^}}train %loss with sgd(lr = 0.5, momentum = 0.0, wd = 0.0) zero 1 over tp{{$}}
# CHECK-NOT: output
