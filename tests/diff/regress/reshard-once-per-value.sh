# diff: a value several operands need in one layout is resharded once per phase and repetition, its result shared (attention(v, v, v) gathered its sequence three times), also in a pipeline and in training
# diff-mesh: 2x2x1
# diff-mesh: 1x4x2
# diff-ref: unpipelined
mesh dp, tp, pp
input x : f32[4, 8, 16] shard(dp, tp, _)
input t : f32[4, 8, 16] shard(dp, _, _)
param w : f32[16, 16] = normal(0.3)
v = tanh(x @ w) shard(dp, tp, _)
a = attention(v, v, v) shard(dp, _, _)
block layer(h : f32[4, 8, 16]) -> f32[4, 8, 16] {
    param u : f32[16, 16] = normal(0.3)
    z = tanh(h @ u) shard(dp, tp, _)
    r = h + (z * z) shard(dp, _, _)
    return r
}
repeat 2 as layers over pp { a = layer(a) }
loss = mse(a, t)
output a
pipeline microbatches 2 schedule gpipe
train loss with sgd(lr = 0.05)
