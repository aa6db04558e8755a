# diff: a forward value the backward slices, narrowed in the forward
# (passes/narrow.c), pipelined and trained, from a generated program (seed
# 2992956): blk3 is recomputed, so the backward normalises x whole again,
# while the forward's layernorm reads x's rows split over a. norm_grad.c
# moves the backward's mean and rstd of x to the forward's layernorm of
# the whole x (as the forward was before partitioning); narrowing the
# backward's slices of them made mean(x's rows) and layernorm_rstd(x's
# rows) of the forward's phase at the backward's place, which the
# pipeline split refused ("microbatch 0 of this value is not on stage
# 0"). They are now made where the forward made them.
# diff-mesh: 1x2
# diff-ref: unpipelined
# diff-variant: --schedule 1f1b
mesh pp, a
let B = 64, D = 16, H = 4
input x1 : f32[B, D, H]
recompute block blk3(h : f32[B, D, H]) -> f32[B, D, H] {
    param g2 : f32[H] = ones
    param g3 : f32[H] shard(_) = ones
    param w4 : f32[H, 8] = normal(0.5)
    v4 = layernorm(h, g2, g3) @ w4 shard(a, _, _)
    param w5 : f32[8, H] = uniform(-0.602, 0.602)
    return tanh(v4 @ w5)
}
v5 = x1
repeat 3 as layers over pp { v5 = blk3(v5) }
param g6 : f32[H] = normal(0.1)
v6 = max(v5, (g6 + 0.25))
loss = 0.5 * sum(mean(mean(v6, axis = 0), axis = -1), axis = -1)
train loss with sgd(lr = 0.05, warmup = 1, decay = cosine, steps = 3, min_lr = 0.001)
