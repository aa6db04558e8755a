# diff: dropout in a pipeline on values split along the batch over an axis the inputs are whole along (reduced from gen.py seed 827161; such programs were refused): the partitioner gathers dim 0 along such axes before the dropout and slices after, so a microbatch's rows are its own
# diff-mesh: 2x2
# diff-ref: unpipelined
# diff-variant: --keep-gathered
mesh a, pp
let D = 16, H = 8
input x0 : f32[D, H, D]
input ids : i32[D]
param w1 : f32[D, H] shard(a, _) = uniform(-0.425, 0.425)
v1 = embedding(w1, ids)
v2, v3 = split(v1, [4, 4], axis = 1)
v4 = concat([v3, v2], axis = 1)
block blk5(h : f32[D, H]) -> f32[D, H] {
    v6 = dropout(h, 0.25)
    v7 = softmax(h) shard(a, _)
    param w2 : f32[H, H] shard(a, _) = uniform(-0.602, 0.602)
    return v7 @ w2
}
v8 = v1
repeat 4 as layers over pp { v8 = blk5(v8) }
v9, v10 = topk(x0, 2)
v11 = v9
loss = 0.5 * mean(mean(v8,
        axis = -1), axis = -1)
output v11, loss
pipeline microbatches 4 schedule 1f1b
train loss with sgd(lr = 0.01)
