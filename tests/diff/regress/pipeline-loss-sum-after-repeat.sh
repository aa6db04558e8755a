# diff: pipelined training (1f1b) of a loss summed over the batch through params after the repeat: their gradients contract or sum the loss's gradient, the same in every row, with each microbatch's rows
# diff-mesh: 1x2
# diff-mesh: 2x2
# diff-mesh: 1x4
# diff-ref: unpipelined
mesh dp, pp
input x : f32[8, 4] shard(dp, _)
input y : f32[8, 4] shard(dp, _)
param w2 : f32[4, 4] = normal(0.3)
param b : f32[4] = normal(0.3)
block layer(h : f32[8, 4]) -> f32[8, 4] {
    param w : f32[4, 4] = normal(0.3)
    return tanh(h @ w)
}
repeat 4 as layers over pp { x = layer(x) }
loss = sum(sum(x @ w2 + b, axis = 1), axis = 0) / 8 - 0.1 * mse(x, y)
output loss
train loss with sgd(lr = 0.5)
pipeline microbatches 4 schedule 1f1b
