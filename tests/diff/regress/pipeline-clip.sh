# diff: clip in a pipeline: the global norm sums every stage's gradients (the per-step squares sent to one stage), and every stage's updates read its factor; clip = 0.01 is far below the norm, so every step clips. A tied embedding too, read on the first stage and the last
# diff-mesh: 1x1x2
# diff-mesh: 2x1x2
# diff-mesh: 1x2x2
# diff-ref: unpipelined
# diff-ids: ids 16
# diff-ids: labels 16
mesh dp, tp, pp
input ids : i32[8, 4] shard(dp, _)
input labels : i32[8, 4] shard(dp, _)
param emb : f32[16, 8] shard(tp, _) = normal(0.5)
block layer(h : f32[8, 4, 8]) -> f32[8, 4, 8] {
    param w : f32[8, 8] shard(_, tp) = normal(0.3)
    return tanh(h @ w)
}
x = embedding(emb, ids)
repeat 4 as layers over pp {
    x = x + layer(x)
}
loss = cross_entropy(x @ transpose(emb), labels)
output loss
pipeline microbatches 2 schedule 1f1b
train loss with sgd(lr = 0.5, momentum = 0.9, clip = 0.01)
