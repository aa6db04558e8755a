# diff: pipelined training of a loss written with mean and sum (a scaled mean over the batch of per-row sums) instead of mse or cross_entropy
# diff-mesh: 2x1
# diff-mesh: 1x2
# diff-mesh: 2x2
# diff-mesh: 1x4
# diff-ref: unpipelined
mesh dp, pp
input x : f32[8, 4] shard(dp, _)
block layer(h : f32[8, 4]) -> f32[8, 4] {
    param w : f32[4, 4] = normal(0.3)
    return tanh(h @ w)
}
repeat 4 as layers over pp { x = layer(x) }
loss = 0.5 * mean(sum(x * x, axis = 1), axis = 0)
output loss
train loss with sgd(lr = 0.5)
pipeline microbatches 2 schedule gpipe
