# diff: inputs split differently (over dp, over tp, replicated, over dp on a non-batch dim) are cut into microbatches of the same global rows, so each row meets its own label
# diff-mesh: 2x1x1
# diff-mesh: 2x2x2
# diff-mesh: 2x1x4
# diff-ref: unpipelined
mesh dp, tp, pp
input x : f32[16, 4] shard(dp, _)
input y : f32[16, 4] shard(_, _)
input z : f32[16, 4] shard(tp, _)
input u : f32[16, 4] shard(_, dp)
block layer(h : f32[16, 4]) -> f32[16, 4] {
    param w : f32[4, 4] = normal(0.3)
    return tanh(h @ w)
}
h = x * z + u
repeat 4 as layers over pp { h = layer(h) }
loss = mse(h, y)
output loss
train loss with sgd(lr = 0.5)
pipeline microbatches 2 schedule gpipe
