# mlp_f16.sh: tests/models/mlp_bf16.sh (see there) with f16 params and
# activations: f32 master weights, f32 AdamW state, the loss computed in
# f32. tests/CMakeLists.txt trains it on several meshes, with ZeRO 1-3,
# against the unsharded run and PyTorch (tests/oracle/mlp_bf16.py mlp_f16).
# f16 has 5 exponent bits, and no loss scaling is needed here: measured by
# the oracle over the test's 5 steps, forward and backward, every value
# is below 4.5 in magnitude (f16's largest is 65504) and every gradient
# below 0.07. At the other end, gradients under f16's smallest normal
# (6.1e-5) keep fewer bits: 10% of the pre-gelu ones (down to 2.4e-7) and
# at most 1.6% of a param's, none rounded to 0; shardrun and the oracle
# round them alike, so that is no error between the two.
mesh dp, tp

let B = 16, D = 32, H = 64

input  x  : f32[B, D]    shard(dp, _)
input  y  : f32[B, D]    shard(dp, _)
param  w1 : f16[D, H]    shard(_, tp)   = normal(0.02)
param  b1 : f16[H]       shard(tp)      = zeros
param  w2 : f16[H, D]    shard(tp, _)   = normal(0.02)

h    = gelu(cast(x, f16) @ w1 + b1)
out  = h @ w2
loss = mse(cast(out, f32), y)

output out, loss
train loss with adamw(lr = 1e-3, beta1 = 0.9, beta2 = 0.95, eps = 1e-3, wd = 0.1)
