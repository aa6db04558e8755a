# diff: an output naming a param whose gradient is made from later stages' params (the loss's gradient is the same in every row) is read where the param is updated (was refused: "an output must be made on one stage")
# diff-mesh: 2x1
# diff-ref: unpipelined
mesh pp, dp
input x : f32[8, 4]
param g : f32[4] = normal(0.5)
v = softmax(x / (abs(g) + 1.0))
block blk(h : f32[8, 4]) -> f32[8, 4] {
    param w : f32[4, 4] = normal(0.5)
    return h @ w
}
repeat 4 as layers over pp { v = blk(v) }
loss = 0.5 * sum(sum(v, axis = -1), axis = -1)
output g, loss
pipeline microbatches 2 schedule interleaved(2)
train loss with sgd(lr = 0.05)
