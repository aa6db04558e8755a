# diff: adamw's moments of a param whose gradient is a per-step value (a bias under a sum loss) are updated on its param's stage, which reads them (were updated on stage 0 only: wrong values from the second step)
# diff-mesh: 2
# diff-ref: unpipelined
# diff-steps: 3
mesh pp
input x : f32[8, 4]
block layer(h : f32[8, 4]) -> f32[8, 4] {
    param w : f32[4, 4] = normal(0.5)
    return tanh(h @ w)
}
repeat 2 as layers over pp { x = layer(x) }
param g : f32[4] = normal(0.5)
loss = sum(sum(x + g, axis = 0), axis = -1)
output loss
train loss with adamw(lr = 0.01, eps = 1e-3)
pipeline microbatches 2 schedule gpipe
