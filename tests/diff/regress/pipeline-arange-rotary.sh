# diff: a rotary table from arange, sin and cos (depending on no input or
# param) made before a pipelined repeat and read by every stage's layers,
# and again inside the block: whole in every microbatch, on a 2x2 mesh
# and in a pipeline
# diff-mesh: 2x2
# diff-mesh: 1x2
# diff-ref: unpipelined
mesh dp, pp
let S = 6, D = 4
input x : f32[8, S, D] shard(dp, _, _)
input y : f32[8, S, D] shard(dp, _, _)
block f(x : f32[8, S, D], c : f32[S, D], s : f32[S, D]) -> f32[8, S, D] {
    param w : f32[D, D] = normal(0.5)
    param swap : f32[D, D] = normal(0.5)
    h = x @ w
    t = cast(arange(D), f32) * 0.25
    return x + tanh(h * c + (h @ swap) * s) * cos(t)
}
ang = reshape(cast(arange(S), f32), [S, 1]) * reshape(cast(arange(D), f32) * 0.5, [1, D])
c = cos(ang)
s = sin(ang)
repeat 2 as layers over pp {
    x = f(x, c, s)
}
loss = mse(x, y)
output x, loss
pipeline microbatches 2 schedule 1f1b
train loss with adamw(lr = 0.01)
