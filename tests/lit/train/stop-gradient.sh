# stop_gradient(x) is x in the forward, and no gradient flows through it:
# v is read only under it, so it gets no gradient and no update (as a
# PyTorch param whose grad is None), w gets the gradient of h's direct
# use alone; a number under it is that number. No pass after autodiff
# sees the op.
# RUN: %shardc %s --mesh 2x2 --emit train-ir | FileCheck %s
# RUN: %shardc %s --mesh 2x2 --emit ir | FileCheck %s --check-prefix=IR
# IR: stop_gradient %{{[0-9]+}} : f32[8, 16]
# CHECK-NOT: stop_gradient
# CHECK: sgd %w,
# CHECK-NOT: sgd %v
# CHECK-NOT: stop_gradient
mesh dp, tp
input x : f32[8, 16] shard(dp, _)
input t : f32[8, 16] shard(dp, _)
param w : f32[16, 16] shard(_, tp) = normal(0.1)
param v : f32[16, 16] = normal(0.1)
h = tanh(x @ w)
g = stop_gradient(h @ v)
loss = mse(h + g, t) + stop_gradient(2.0)
output g, loss
train loss with sgd(lr = 0.1)
