# diff: recompute block (LANGUAGE.md §12) in a pipeline: each layer's
# forward run again in its stage's backward, on meshes splitting tp and
# dp, with ops whose gradients read their results (tanh, exp, sigmoid,
# division)
# diff-mesh: 2x2x2
# diff-mesh: 1x1x2
# diff-ref: unpipelined
mesh dp, tp, pp
let B = 8, S = 4, D = 16, F = 32
input x : f32[B, S, D] shard(dp, _, _)
input y : f32[B, S, D] shard(dp, _, _)
recompute block mlp(x : f32[B, S, D]) -> f32[B, S, D] {
    param g : f32[D] = ones
    param w1 : f32[D, F] shard(_, tp) = normal(0.3)
    param w2 : f32[F, D] shard(tp, _) = normal(0.2)
    h = rmsnorm(x, g)
    a = h @ w1
    return (tanh(a) * exp(0.1 * a) / (1.5 + sigmoid(a))) @ w2
}
repeat 4 as layers over pp {
    x = x + mlp(x)
}
loss = mse(x, y)
output loss, x
pipeline microbatches 2 schedule 1f1b
train loss with adamw(lr = 0.01)
