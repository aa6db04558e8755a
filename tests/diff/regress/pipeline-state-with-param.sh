# diff: an optimizer state whose param's gradient is a per-step value (a bias under a sum loss) lives on its param's stage, not stage 0 (the momentum read the param there: "used on stages 0 and 1")
# diff-mesh: 2
# diff-ref: unpipelined
mesh pp
input x : f32[8, 4]
block layer(h : f32[8, 4]) -> f32[8, 4] {
    param w : f32[4, 4] = normal(0.5)
    return tanh(h @ w)
}
repeat 2 as layers over pp { x = layer(x) }
param g : f32[4] = normal(0.5)
loss = sum(sum(x - g, axis = 0), axis = -1)
output loss
train loss with sgd(lr = 0.05, momentum = 0.9)
pipeline microbatches 2 schedule 1f1b
