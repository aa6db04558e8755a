# A loss that is a mean over the batch of per-row sums: its gradient, the
# same in every row (a constant expanded over the 8 rows of the batch), is
# read by each microbatch as its first 4 rows, and the two microbatches'
# losses are averaged.
# RUN: %shardc %s --mesh 2 --emit stage-ir | FileCheck %s
mesh pp
input x : f32[8, 4]
block layer(h : f32[8, 4]) -> f32[8, 4] {
    param w : f32[4, 4] = normal(0.1)
    return h @ w
}
repeat 2 as layers over pp { x = layer(x) }
loss = mean(sum(x * x, axis = 1), axis = 0)
output loss
train loss with sgd(lr = 0.1)
pipeline microbatches 2 schedule gpipe

# CHECK-LABEL: // ---- stage 1 of 2 ----
# CHECK: %loss = mean {{%[0-9]+}} {axis = 0, keepdims = false} : f32[]
# CHECK: %loss.1 = mean {{%[0-9]+}} {axis = 0, keepdims = false} : f32[]
# CHECK-NEXT: %loss.2 = add %loss, %loss.1
# CHECK-NEXT: %loss.3 = const {value = 0.5}
# CHECK-NEXT: %loss.4 = mul %loss.2, %loss.3
# CHECK: %[[G:[0-9]+]] = expand {{%[0-9]+}} {shape = [8, 4]} : f32[8, 4] {{.*}} phase backward
# CHECK-NEXT: %[[B:[0-9]+]] = reshape %[[G]] {shape = [1, 32]}
# CHECK-NEXT: %[[S:[0-9]+]] = extract %[[B]] {shape = [4, 4], offset = 0} : f32[4, 4]
# CHECK-NEXT: mul %[[S]], %layers.1.x :
# CHECK: mul %[[S]], %layers.1.x.1 :
# CHECK: output "loss" = %loss.4
