# select_masks.sh: comparisons, bool values and where (LANGUAGE.md §12)
# on every dtype that reaches a kernel: f32 and bf16 compared (widened
# exactly), i32 compared and picked, bool compared for equality, cast to
# and from, transposed and gathered over the mesh; where broadcasting a
# [64] mask, a scalar, and a [8, 1] column; the gradient of where into
# both branches. Dropout (its own kernel) of f32 split over dp and tp and
# of bf16, forward and backward.
mesh dp, tp
input x   : f32[8, 64] shard(dp, _)
input ids : i32[8, 64] shard(dp, _)
input m   : bool[64]
input hb  : bf16[8, 64]
param w   : f32[64, 64] shard(_, tp) = normal(0.2)
param v   : f32[8, 1] = normal(1.0)
h   = x @ w
y   = dropout(where(h > 0.0, h, 0.1 * h), 0.25)
k   = ids == 1
z   = where(m, x, -x) + cast(k, f32)
t   = transpose(where(ids < 1, ids, 3), [1, 0])
b16 = dropout(where(hb <= 0.5, hb, cast(x, bf16)), 0.5)
same = (x >= 0.0) == m
mt  = transpose(cast(x, bool) != same, [1, 0])
col = where(x < v, v, h)
loss = mean(y * y) + mean(z * col) + 0.5 * mean(cast(b16, f32) * cast(mt, f32)[0, 0])
output loss, y, t, b16, mt, same
train loss with sgd(lr = 0.1)
