# diff: slices, concats and a split (LANGUAGE.md §12), forward and
# backward, on meshes that split the sliced dims: a rotary table of arange,
# sin and cos joined in halves, each head's halves rotated, the heads split
# and joined back in another order, and a learned first row joined to the
# rest of the sequence (a ViT CLS token)
# diff-mesh: 2x2
# diff-mesh: 1x4
# diff-mesh: 4x1
mesh dp, tp
let B = 4, S = 8, H = 4, D = 8
input x : f32[B, S, H * D] shard(dp, _, _)
input y : f32[B, S, H * D] shard(dp, _, _)
param wq : f32[H * D, H * D] shard(_, tp) = normal(0.3)
param cls : f32[1, 1, H * D] = normal(0.5)
pos = cast(arange(S), f32)
inv = cast(arange(D / 2), f32) * 0.25
ang = reshape(pos, [S, 1]) * reshape(inv, [1, D / 2])
cs = concat([cos(ang), cos(ang)], axis = 1)
sn = concat([sin(ang), sin(ang)], axis = 1)
q = transpose(reshape(x @ wq, [B, S, H, D]), [0, 2, 1, 3])
rot = concat([-q[:, :, :, D / 2:], q[:, :, :, :D / 2]], axis = -1)
r = q * cs + rot * sn
a, b = split(r, [1, H - 1], axis = 1)
r2 = concat([b, a * 2.0], axis = 1)
o = reshape(transpose(r2, [0, 2, 1, 3]), [B, S, H * D])
t = concat([cls + 0.0 * x[:, :1, :], o[:, 1:, :]], axis = 1)
loss = mse(t, y)
output t, loss
train loss with sgd(lr = 0.1)
