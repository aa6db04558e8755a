# diff: dropout in a pipeline on a value whose batch is its dim 1, split over an axis the inputs are whole along (such programs were refused: "dropout on a value whose batch is split 2 ways, which do not divide the inputs' 1 blocks"): the batch's blocks are now a multiple of that split, and each microbatch draws the bits of its own rows
# diff-mesh: 2x1
# diff-mesh: 2x2
# diff-ref: unpipelined
mesh c, pp
let B = 16, D = 8
input x : f32[B, D] shard(_, _)
param w0 : f32[D, D] = normal(0.3)
block blk(h : f32[B, D]) -> f32[B, D] {
    t = transpose(h, [1, 0]) shard(_, c)
    u = dropout(t, 0.25)
    param w : f32[D, D] = normal(0.3)
    return transpose(u, [1, 0]) @ w
}
v = x @ w0
repeat 2 as layers over pp { v = blk(v) }
loss = mean(sum(v * v, axis = 1))
output v, loss
pipeline microbatches 4 schedule interleaved(1)
train loss with sgd(lr = 0.05)
