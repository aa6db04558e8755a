# diff: a per-step value that differs row by row along the batch (a table from arange, and the dropout of a loss gradient the same in every row) read by the microbatches: each reads its own rows of it, as the unpipelined program does
# diff-mesh: 1x2
# diff-mesh: 2x2
# diff-mesh: 2x4
# diff-ref: unpipelined
# diff-steps: 2
mesh dp, pp
input x : f32[8, 16] shard(dp, _)
block layer(h : f32[8, 16]) -> f32[8, 16] {
    param w : f32[16, 16] = normal(0.3)
    return h @ w
}
rows = reshape(cast(arange(8), f32), [8, 1])
h = x * (rows + 1.0)
repeat 4 as layers over pp {
    h = layer(h)
}
loss = sum(dropout(h, 0.5))
output loss, h
pipeline microbatches 2 schedule gpipe
train loss with sgd(lr = 0.01)
