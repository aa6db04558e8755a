# The momentum of g, a param read on the last stage whose gradient is a
# per-step value (the loss's gradient summed over the rows), lives on
# g's stage with g: its update reads g (the weight decay), and stage 0
# holds neither.
# RUN: %shardc %s --mesh 2 --emit stage-ir | FileCheck %s
mesh pp
input x : f32[8, 4]
block layer(h : f32[8, 4]) -> f32[8, 4] {
    param w : f32[4, 4] = normal(0.5)
    return tanh(h @ w)
}
repeat 2 as layers over pp { x = layer(x) }
param g : f32[4] = normal(0.5)
loss = sum(sum(x - g, axis = 0), axis = -1)
train loss with sgd(lr = 0.05, momentum = 0.9)
pipeline microbatches 2 schedule 1f1b

# CHECK-LABEL: // ---- stage 0 of 2 ----
# CHECK-NOT: opt.g.momentum
# CHECK-NOT: %g =
# CHECK-LABEL: // ---- stage 1 of 2 ----
# CHECK: %g = param {name = "g"
# CHECK: %[[M:[0-9]+]] = state {name = "opt.g.momentum"
# CHECK: %[[N:[0-9]+]] = momentum %[[M]], %{{[0-9]+}}, %g
# CHECK: update %[[M]] = %[[N]]
# CHECK: update %g = 
