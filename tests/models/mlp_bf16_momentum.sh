# mlp_bf16_momentum.sh: tests/models/mlp_bf16.sh (see there) trained by sgd
# with momentum: an f32 master and an f32 momentum buffer per param.
mesh dp, tp

let B = 16, D = 32, H = 64

input  x  : f32[B, D]    shard(dp, _)
input  y  : f32[B, D]    shard(dp, _)
param  w1 : bf16[D, H]   shard(_, tp)   = normal(0.02)
param  b1 : bf16[H]      shard(tp)      = zeros
param  w2 : bf16[H, D]   shard(tp, _)   = normal(0.02)

h    = gelu(cast(x, bf16) @ w1 + b1)
out  = h @ w2
loss = mse(cast(out, f32), y)

output out, loss
train loss with sgd(lr = 0.05, momentum = 0.9)
