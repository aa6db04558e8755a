# diff: a gather's slice back made from what it gathered (passes/narrow.c),
# pipelined and trained, from a generated program (seed 2950174): the
# where in blk5 compares g with g4 + 0.25 whole, then its result is split
# over (sp, b); narrowed to the rank's part, it reads g4 + 0.25 sliced
# over b, a slice of g4 gathered over b, which is g4 itself: the gather
# goes (2 of 4 all_gathers a stage on 3x2x1)
# diff-mesh: 3x2x1
# diff-ref: unpipelined
# diff-variant: --unroll
# diff-variant: --recompute
mesh sp, b, pp
let D = 6
input x0 : f32[D, D] shard(_, _)
input target : f32[D, 1] shard(_, _)
param w1 : f32[D, 12] = normal(0.408)
v1 = x0 @ w1
param w2 : f32[12, D] = normal(0.289)
v2 = v1 @ w2
param w3 : f32[12, D] = uniform(-0.491, 0.491)
v3 = v1 @ w3
v4 = where(v2 >= (x0 + 0.25),
        v2, (x0 + 0.25)) shard(sp, b)
block blk5(h : f32[D, D], g : f32[D, 12]) -> (f32[D, D], f32[D, 12]) {
    param g4 : f32[12] = zeros
    v6 = where(g <= (g4 + 0.25),
        g, (g4 + 0.25)) shard(sp, b)
    v7 = sum(v6, axis = 1)
    v8 = cumsum(g,
        axis = 1)
    param w5 : f32[12, D] = normal(0.289)
    param w6 : f32[D, D] shard(_, _) = uniform(-0.694, 0.694)
    v9 = tanh((v8 @ w5 @ w6) * 0.0417)
    param w7 : f32[D, 12] shard((b, sp), _) = uniform(-0.694, 0.694)
    return v9, tanh(g * 0.5 + v9 @ w7 * 0.5)
}
v10 = v3 * 0.25
v11 = v1 * 0.5
repeat 2 as layers over pp { v10, v11 = blk5(v10, v11) }
v12 = sum(v11, axis = 1, keepdims = true)
param g8 : f32[1] shard(_) = ones
param w9 : f32[1, 1] shard(_, _) = normal(1.0)
v13 = v12 + rmsnorm(v12, g8, eps = 1e-2) @ w9
loss = mse(v13, target)
output v13, loss
pipeline microbatches 1 schedule 1f1b
train loss with sgd(lr = 0.05, momentum = 0.9)
