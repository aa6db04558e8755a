# diff: per-row outputs whose batch is split unlike the inputs' (replicated, over (dp, tp)) are put back together from microbatches of the inputs' rows
# diff-mesh: 2x2x1
# diff-mesh: 2x2x2
# diff-ref: unpipelined
mesh dp, tp, pp
input x : f32[16, 4] shard(dp, _)
input y : f32[16, 4] shard(_, _)
block layer(h : f32[16, 4]) -> f32[16, 4] {
    param w : f32[4, 4] = normal(0.3)
    return tanh(h @ w)
}
h = x
repeat 4 as layers over pp { h = layer(h) }
r = h + y shard(_, _)
f = h * y shard((dp, tp), _)
loss = mse(h, y)
output r, f, loss
train loss with sgd(lr = 0.5)
pipeline microbatches 2 schedule 1f1b
