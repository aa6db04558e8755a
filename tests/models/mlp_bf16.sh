# mlp_bf16.sh: a two-layer MLP with bf16 params and activations, trained
# with f32 master weights and f32 optimizer state (mixed precision): each
# param has an f32 master copy "opt.NAME.master", AdamW's m and v are f32,
# the gradient is cast to f32 once and the param takes the new master
# rounded to bf16. The loss is computed in f32. tests/CMakeLists.txt trains
# it on several meshes, with ZeRO 1-3, against the unsharded run and
# PyTorch (tests/oracle/mlp_bf16.py); mlp_bf16_momentum.sh is the same
# model with sgd and momentum.
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
train loss with adamw(lr = 1e-3, beta1 = 0.9, beta2 = 0.95, eps = 1e-3, wd = 0.1)
