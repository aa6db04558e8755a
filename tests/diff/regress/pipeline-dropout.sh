# diff: dropout in a pipeline: a microbatch's rows are rows offset .. of the rank's, so its bits are the unpipelined run's; dropout before the pipelined repeat (stage 0) and in every layer, forward and backward
# diff-mesh: 1x2
# diff-mesh: 2x2
# diff-ref: unpipelined
# diff-steps: 3
mesh dp, pp
input x : f32[8, 16] shard(dp, _)
input y : f32[8, 16] shard(dp, _)
block layer(h : f32[8, 16]) -> f32[8, 16] {
    param w : f32[16, 16] = normal(0.3)
    return dropout(tanh(h @ w), 0.3)
}
x = dropout(x, 0.1)
repeat 4 as layers over pp {
    x = layer(x)
}
loss = mse(x, y)
output loss, x
pipeline microbatches 2 schedule 1f1b
train loss with sgd(lr = 0.1)
