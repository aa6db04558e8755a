# diff: recompute blocks called one on another's result (no residual) in an
# interleaved pipeline: each call recomputes only its own values, reading
# the previous call's result as kept (seed 630037 of the generator, which
# once recomputed every earlier call and crossed chunks backward)
# diff-mesh: 2x1
# diff-ref: unpipelined
# diff-ids: ids 16
mesh pp, a
let B = 8, D = 16
input x0 : f32[B, B]
input x1 : f32[B, B]
input x2 : f32[B, B, B] shard(_, _, _)
input ids : i32[B, B]
param w1 : f32[D, D] shard(_, _) = normal(0.25)
v1 = embedding(w1, ids)
param w2 : f32[B, B] = uniform(-0.602, 0.602)
v2 = x1 @ w2
v3 = v2 + 0.5
param w3 : f32[B, B] shard(_, _) = normal(0.354)
v4 = v2 @ w3 shard(_, _)
recompute block blk5(h : f32[B, B]) -> f32[B, B] {
    v6 = amax(h, axis = -1, keepdims = true) shard(_, _)
    param w4 : f32[1, D] = normal(1.0)
    v7 = v6 @ w4
    param g5 : f32[1] shard(_) = uniform(0.5, 1.5)
    param g6 : f32[1] shard(a) = normal(0.1)
    v8 = layernorm(v6, g5, g6, eps = 1e-2)
    param w7 : f32[1, B] shard(_, _) = normal(1.0)
    return v8 @ w7
}
v9 = x1   # a comment
repeat 8 as layers over pp { v9 = blk5(v9) }
param g8 : f32[B] = zeros
v10 = v9 * g8
v11 = reshape(v9, [B, 2, 4])   # a comment
loss = sum(mean(mean(v11, axis = -1), axis = 0), axis = 0)
output v10, v11, v4, loss
pipeline microbatches 2 schedule interleaved(2)
train loss with adamw(lr = 0.01, beta1 = 0.8, beta2 = 0.9, eps = 1e-2, wd = 0.1) zero 1 over a
