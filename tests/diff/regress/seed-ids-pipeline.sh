# diff: ids and labels made from --seed in a pipeline, where each
# microbatch reads its rows of them, are those of the unpipelined program
# (they came out all zeros)
# diff-inputs: seed
# diff-mesh: 1x2
# diff-mesh: 2x2
# diff-ref: unpipelined
mesh dp, pp
input ids : i32[8, 4] shard(dp, _)
input lab : i32[8, 4] shard(dp, _)
param emb : f32[16, 8] = normal(0.5)
param out : f32[8, 10] = normal(0.5)
block f(x : f32[8, 4, 8]) -> f32[8, 4, 8] {
    param w : f32[8, 8] = normal(0.5)
    return tanh(x @ w)
}
x = embedding(emb, ids)
repeat 2 as layers over pp {
    x = x + f(x)
}
loss = cross_entropy(x @ out, lab)
output loss
pipeline microbatches 2 schedule 1f1b
train loss with sgd(lr = 0.1)
