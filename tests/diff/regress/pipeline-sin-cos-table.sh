# diff: sin and cos, forward and backward, on a 2x2 mesh and in a pipeline:
# each layer's rotation table, made from its param (cos and sin of
# angles), depends on no input, so it is whole in every microbatch, and it
# rotates pairs of features as rotary embeddings do (h * cos + swap(h) * sin)
# diff-mesh: 2x2
# diff-mesh: 1x2
# diff-ref: unpipelined
mesh dp, pp
input x : f32[8, 6, 4] shard(dp, _, _)
input y : f32[8, 6, 4] shard(dp, _, _)
block f(x : f32[8, 6, 4]) -> f32[8, 6, 4] {
    param w : f32[4, 4] = normal(0.5)
    param swap : f32[4, 4] = normal(0.5)
    param ang : f32[6, 4] = normal(1.0)
    h = x @ w
    return x + tanh(h * cos(ang) + (h @ swap) * sin(ang))
}
repeat 2 as layers over pp {
    x = f(x)
}
loss = mse(sin(x) + cos(0.5 * x), y)
output x, loss
pipeline microbatches 2 schedule 1f1b
train loss with adamw(lr = 0.01)
