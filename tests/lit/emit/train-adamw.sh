# adamw: PyTorch's defaults (beta1 0.9, beta2 0.999, eps 1e-8, wd 0.01)
# for options not given.
# RUN: %shardc %s --mesh 2x2 --emit ir | FileCheck %s
mesh dp, tp
input x : f32[8, 16] shard(dp, _)
input y : f32[8, 16] shard(dp, _)
param w : f32[16, 16] shard(_, tp) = normal(0.02)
loss = mse(x @ w, y)
output loss
train loss with adamw(lr = 3e-4)
# CHECK: {{^}}output "loss" = %loss{{$}}
# CHECK-NEXT: {{^}}train %loss with adamw(lr = 0.0003, beta1 = 0.9, beta2 = 0.999, eps = 1e-08, wd = 0.01){{$}}
