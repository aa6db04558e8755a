# diff: a recomputed dropout in a pipeline, whose backward drops out a gradient the same in every row (the loss's, through the later layers' params) on values split along the batch over an axis the inputs are whole along (reduced from gen.py seed 1101897; such programs were refused: "a per-step value that differs row by row is split along the batch 2 ways, which do not divide the inputs' 1 blocks"): the batch's blocks are now a multiple of that split, so each rank's shard of the dropped-out gradient holds whole blocks and a microbatch reads its own rows of each
# diff-mesh: 2x1
# diff-mesh: 2x2
# diff-ref: unpipelined
# diff-ids: ids 8
mesh c, pp
let B = 32, D = 12, H = 8
input ids : i32[B, H]
param w1 : f32[H, D] shard(c, _) = normal(0.354)
v4 = reshape(transpose(embedding(w1, ids), [0, 2, 1]), [B, D, 4, 2]) shard(c, _, _, _)
recompute block blk(h : f32[B, D, 4, 2]) -> f32[B, D, 4, 2] {
    v8 = dropout(h, 0.5)
    param w2 : f32[2, D] = normal(0.707)
    param w3 : f32[D, 2] = normal(0.289)
    return (v8 @ w2) @ w3
}
v10 = v4
repeat 4 as layers over pp { v10 = blk(v10) }
loss = sum(mean(mean(mean(v10, axis = 0), axis = 0), axis = -1), axis = 0)
pipeline microbatches 4 schedule 1f1b
train loss with sgd(lr = 0.05)
