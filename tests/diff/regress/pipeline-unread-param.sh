# diff: a param no op reads is kept in a pipelined plan, as in the unpipelined one
# diff-mesh: 1x2
# diff-mesh: 2x2
# diff-ref: unpipelined
mesh dp, pp
input x : f32[8, 4] shard(dp, _)
input y : f32[8, 4]
param unused : f32[4] = normal(0.3)
block layer(h : f32[8, 4]) -> f32[8, 4] {
    param w : f32[4, 4] = normal(0.3)
    return tanh(h @ w)
}
h = x
repeat 2 as layers over pp { h = layer(h) }
loss = mse(h, y)
output loss
train loss with sgd(lr = 0.5)
pipeline microbatches 2 schedule gpipe
