# diff: a param read before the pipelined repeat and after it, whose gradient on one stage is a per-step value (the loss's gradient is the same in every row): the two contributions summed on one stage
# diff-mesh: 2
# diff-ref: unpipelined
mesh pp
input x : f32[8, 4]
param g : f32[4] = normal(0.5)
x = x + g
block layer(h : f32[8, 4]) -> f32[8, 4] {
    param w : f32[4, 4] = normal(0.5)
    return h @ w
}
repeat 4 as layers over pp { x = layer(x) }
x = x + g
loss = mean(mean(x, axis = -1), axis = 0)
train loss with sgd(lr = 0.1)
pipeline microbatches 2 schedule gpipe
