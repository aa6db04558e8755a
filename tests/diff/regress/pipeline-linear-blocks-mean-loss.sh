# diff: linear blocks under a mean loss: the gradient reaching an earlier stage is made from later stages' params alone, which that stage now receives each step (was refused: "param used on stages 0 and 1")
# diff-mesh: 2x1
# diff-mesh: 2x2
# diff-ref: unpipelined
mesh pp, tp
input x : f32[8, 4]
block layer(h : f32[8, 4]) -> f32[8, 4] {
    param w : f32[4, 4] = normal(0.5)
    return h @ w
}
repeat 4 as layers over pp { x = layer(x) }
loss = mean(mean(x, axis = -1), axis = 0)
output loss
train loss with sgd(lr = 0.1, momentum = 0.9)
pipeline microbatches 2 schedule 1f1b
