# train LOSS with sgd(...): unspecified options print as 0; the train line
# follows the outputs. A program without train has no train line.
# RUN: %shardc %s --mesh 2x2 --emit ir | FileCheck %s
mesh dp, tp
input x : f32[8, 16] shard(dp, _)
input y : f32[8, 16] shard(dp, _)
param w : f32[16, 16] shard(_, tp) = normal(0.02)
out = x @ w
loss = mse(out, y)
output out, loss
train loss with sgd(lr = 0.01)
# CHECK: {{^}}%loss = mse %out, %y : f32[]{{$}}
# CHECK-NEXT: {{^}}output "out" = %out{{$}}
# CHECK-NEXT: {{^}}output "loss" = %loss{{$}}
# CHECK-NEXT: {{^}}train %loss with sgd(lr = 0.01, momentum = 0.0, wd = 0.0){{$}}
# CHECK-NOT: {{.}}
