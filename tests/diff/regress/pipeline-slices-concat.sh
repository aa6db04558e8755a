# diff: slices, concats and a split in a pipeline: a rotary table made
# before the pipelined repeat (sliced and joined, whole in every
# microbatch), and in each layer slices and a concat along the feature and
# sequence dims of per-microbatch values, forward and backward
# diff-mesh: 2x2
# diff-mesh: 1x2
# diff-ref: unpipelined
mesh dp, pp
let B = 8, S = 6, D = 8
input x : f32[B, S, D] shard(dp, _, _)
input y : f32[B, S, D] shard(dp, _, _)
pos = cast(arange(S), f32)
inv = cast(arange(D / 2), f32) * 0.5
ang = reshape(pos, [S, 1]) * reshape(inv, [1, D / 2])
cs = concat([cos(ang), cos(ang)], axis = 1)
sn = concat([sin(ang), sin(ang)], axis = 1)
block f(x : f32[B, S, D], cs : f32[S, D], sn : f32[S, D]) -> f32[B, S, D] {
    param w : f32[D, D] = normal(0.4)
    param g : f32[S, D] = normal(0.4)
    h = x @ w
    rot = concat([-h[:, :, D / 2:], h[:, :, :D / 2]], axis = -1)
    r = h * cs + rot * sn
    a, b = split(r, [2, S - 2], axis = 1)
    return x + tanh(concat([b, a], axis = 1) * g[-1, :])
}
repeat 2 as layers over pp {
    x = f(x, cs, sn)
}
loss = mse(x[:, 1:, :], y[:, 1:, :])
output x, loss
pipeline microbatches 2 schedule 1f1b
train loss with adamw(lr = 0.01)
