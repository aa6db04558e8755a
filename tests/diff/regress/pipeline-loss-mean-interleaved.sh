# diff: pipelined training (interleaved) of a loss that is a mean over the batch of per-row means, with layernorm's params after the repeat
# diff-mesh: 1x2
# diff-mesh: 2x2
# diff-mesh: 1x4
# diff-ref: unpipelined
mesh dp, pp
input x : f32[8, 4] shard(dp, _)
input y : f32[8, 4] shard(dp, _)
param g : f32[4] = normal(0.3)
param b : f32[4] = normal(0.3)
block layer(h : f32[8, 4]) -> f32[8, 4] {
    param w : f32[4, 4] = normal(0.3)
    return tanh(h @ w)
}
repeat 8 as layers over pp { x = layer(x) }
loss = mean(mean(layernorm(x, g, b) * y, axis = 1), axis = 0)
output loss
train loss with sgd(lr = 0.5)
pipeline microbatches 4 schedule interleaved(2)
