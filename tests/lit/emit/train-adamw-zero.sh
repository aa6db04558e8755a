# adamw with every option, and ZeRO: `zero K over AXIS` prints after the
# optimizer; K may be a constant (-D Z=3 gives stage 3).
# RUN: %shardc %s --mesh 2x2 --emit ir | FileCheck %s
# RUN: %shardc %s --mesh 2x2 -D Z=3 --emit ir | FileCheck %s --check-prefix=Z3
mesh dp, tp
let Z = 2
input x : f32[8, 16] shard(dp, _)
input y : f32[8, 16] shard(dp, _)
param w : f32[16, 16] shard(_, tp) = normal(0.02)
loss = mse(x @ w, y)
output loss
train loss with adamw(lr = 3e-4, beta1 = 0.8, beta2 = 0.95, eps = 1e-6, wd = 0.1) zero Z over dp
# CHECK: {{^}}train %loss with adamw(lr = 0.0003, beta1 = 0.8, beta2 = 0.95, eps = 1e-06, wd = 0.1) zero 2 over dp{{$}}
# Z3: {{^}}train %loss with adamw({{.*}}) zero 3 over dp{{$}}
