# diff: in a pipeline, outputs named after an input and after params of the
# first and the last stage: the params' values after the update, the input
# reassigned before the pipelined repeat and handed back from its stage
# diff-mesh: 2x2
# diff-mesh: 1x2
# diff-ref: unpipelined
mesh dp, pp
input x : f32[8, 4] shard(dp, _)
input y : f32[8, 4] shard(dp, _)
param w0 : f32[4, 4] = normal(0.5)
param w9 : f32[4, 4] = normal(0.5)
block f(x : f32[8, 4]) -> f32[8, 4] {
    param w : f32[4, 4] = normal(0.5)
    return tanh(x @ w)
}
x = x @ w0
repeat 2 as layers over pp {
    x = x + f(x)
}
loss = mse(x @ w9, y)
output x, w0, w9, y, loss
pipeline microbatches 2 schedule 1f1b
train loss with sgd(lr = 0.1)
