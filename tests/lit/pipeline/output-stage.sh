# Outputs any stage could make (a, per row from the input and w0; v, per
# step from w0) are read on the stage that made them or holds w0, the
# first: read on the last stage, they would come from a copy of w0 that no
# update reaches.
# RUN: %shardc %s --mesh 2 --emit stage-ir | FileCheck %s
mesh pp
input x : f32[8, 4]
input y : f32[8, 4]
param w0 : f32[4, 4] = normal(0.3)
block layer(h : f32[8, 4]) -> f32[8, 4] {
    param w : f32[4, 4] = normal(0.3)
    return tanh(h @ w)
}
a = x @ w0
v = w0 * 2
h = a
repeat 2 as layers over pp { h = layer(h) }
loss = mse(h, y)
output a, v, loss
train loss with sgd(lr = 0.5)
pipeline microbatches 2 schedule gpipe

# CHECK-LABEL: // ---- stage 0 of 2 ----
# CHECK: %w0 = param {name = "w0"
# CHECK: output "a" = %a.2
# CHECK-NEXT: output "v" = %v
# CHECK-NEXT: update %w0 =
# CHECK-LABEL: // ---- stage 1 of 2 ----
# CHECK-NOT: "w0"
# CHECK: output "loss"
# CHECK-NOT: "w0"
