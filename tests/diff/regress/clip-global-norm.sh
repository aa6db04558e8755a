# diff: clip = C: the global L2 norm of the gradients of params split over
# tp (each rank's partial sum of squares, all-reduced), of a replicated
# bias, and of a bf16 param (summed in f32), clipped gradients, on 2x2 and
# 1x4 (ZeRO 2 over dp on 2x2 splits the gradients once more)
# diff-mesh: 2x2
# diff-mesh: 1x4
mesh dp, tp
input x : f32[8, 16] shard(dp, _)
input t : f32[8, 16] shard(dp, _)
param w : f32[16, 32] shard(_, tp) = normal(0.3)
param v : f32[32, 16] shard(tp, _) = normal(0.3)
param b : f32[16] = normal(0.1)
param s : bf16[16] = normal(0.5)
h = tanh(x @ w) @ v + b
loss = mse(h * cast(s, f32), t)
output loss, w, b, s
train loss with sgd(lr = 0.5, momentum = 0.9, clip = 0.05) zero 2 over dp
