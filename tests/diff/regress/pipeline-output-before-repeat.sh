# diff: outputs made before the pipelined repeat (a per-row value and a per-step value of a first-stage param) follow the training steps instead of keeping their step-1 values
# diff-mesh: 1x2
# diff-mesh: 2x2
# diff-ref: unpipelined
# diff-steps: 3
mesh dp, pp
input x : f32[8, 4] shard(dp, _)
input y : f32[8, 4]
param w0 : f32[4, 4] = normal(0.3)
block layer(h : f32[8, 4]) -> f32[8, 4] {
    param w : f32[4, 4] = normal(0.3)
    return tanh(h @ w)
}
a = x @ w0
v = w0 * 2
h = a
repeat 2 as layers over pp { h = layer(h) }
loss = mse(h, y)
output a, v, loss
train loss with sgd(lr = 0.5)
pipeline microbatches 2 schedule gpipe
