# diff: --keep-gathered in a pipeline with sequence parallelism: each
# stage's backward reads, per microbatch, the block input its forward
# gathered along the sequence (the weight gradients of the column-parallel
# w1), one layer a plain block and one a recompute block (whose backward
# gathers again from its recomputed values)
# diff-flags: --keep-gathered
# diff-mesh: 2x2x2
# diff-mesh: 1x4x2
# diff-ref: unpipelined
mesh dp, tp, pp
let B = 8, S = 8, D = 16, F = 32
input x : f32[B, S, D] shard(dp, tp, _)
input y : f32[B, S, D] shard(dp, tp, _)
block mlp(x : f32[B, S, D]) -> f32[B, S, D] {
    param g : f32[D] = ones
    param w1 : f32[D, F] shard(_, tp) = normal(0.3)
    param w2 : f32[F, D] shard(tp, _) = normal(0.2)
    h = rmsnorm(x, g)
    return gelu(h @ w1) @ w2
}
recompute block mlp2(x : f32[B, S, D]) -> f32[B, S, D] {
    param g : f32[D] = ones
    param w1 : f32[D, F] shard(_, tp) = normal(0.3)
    param w2 : f32[F, D] shard(tp, _) = normal(0.2)
    h = rmsnorm(x, g)
    return tanh(h @ w1) @ w2
}
repeat 2 as layers over pp {
    x = (x + mlp(x)) shard(dp, tp, _)
    x = (x + mlp2(x)) shard(dp, tp, _)
}
loss = mse(x, y)
output loss, x
pipeline microbatches 2 schedule 1f1b
train loss with adamw(lr = 0.01)
