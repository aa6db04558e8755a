# diff: an interleaved pipeline stage whose rolled tasks' buffers fall in
# one class of more places than the microbatches (two template buffers
# that share an instance's buffer, each with its other instances
# elsewhere): the plan writer gave microbatch 3 slot 4 of 4 microbatches
# and refused its own plan (exit 3). Now such a buffer lists its own
# copies (codegen/plan_roll.c). Reduced from gen.py seed 2351531.
# diff-mesh: 2x1
# diff-ref: unpipelined
# diff-ids: ids 16
# diff-ids: labels 16
mesh pp, sp
let D = 16, H = 8
input x1 : f32[D, H, H]
input x2 : f32[D, H, D]
input labels : i32[D, H]
param w1 : f32[D, D] = normal(0.25)
v2, v3 = split(x2, [4, 4], axis = 1)
v4 = concat([v3, v2], axis = 1)
block blk8(h : f32[D, H, D]) -> f32[D, H, D] {
    param w5 : f32[D, D] = normal(0.25)
    return tanh(h @ w5)
}
v10 = v4
repeat 8 as layers over pp { v10 = v10 + blk8(v10) }
v11, v12 = topk(x1, 1)
v13 = v11
param g6 : f32[1] = zeros
v14 = where(v13 < (g6 + 0.25), v13, (g6 + 0.25))
param w8 : f32[1, D] = normal(1.0)
loss = cross_entropy(v14 @ w8 @ transpose(w1),
        labels)
output v4
pipeline microbatches 4 schedule interleaved(2)   # a comment
train loss with sgd(lr = 0.05, warmup = 0, decay = none, steps = 3, min_lr = 0.001)
