# diff: a norm's gain and bias gradients as partial sums over runs of rows in its input gradient's row kernel (passes/norm_cols.c): pre-norm residual layers, layernorms with a bias and an rmsnorm, in f32 and in bf16 (the partial sums of f32 casts, cast back), 128 rows on one rank (8 runs of 16), 64 under dp 2 (4 runs), 32 under dp 4 (2 runs), with tp splitting the MLP; and a layernorm of a matrix ([N, D] already: reshapes of dy and x to [P, R, D]), 64 rows on one rank, 32 under dp 2, 16 under dp 4 (whole sums there); under adamw
# diff-mesh: 2x2
# diff-mesh: 4x1
mesh dp, tp
input x : f32[8, 16, 32] shard(dp, _, _)
input z : f32[64, 32] shard(dp, _)
param wz : f32[32, 32] = normal(0.3)
param gz : f32[32] = ones
param bz : f32[32] = zeros
param wz2 : f32[32, 32] = normal(0.2)
param w0 : f32[32, 32] = normal(0.3)
param g1 : f32[32] = ones
param b1 : f32[32] = zeros
param w1 : f32[32, 64] shard(_, tp) = normal(0.2)
param w2 : f32[64, 32] shard(tp, _) = normal(0.2)
param g2 : f32[32] = ones
param w3 : f32[32, 32] = normal(0.2)
param g3 : bf16[32] = ones
param b3 : bf16[32] = zeros
param w4 : bf16[32, 32] = normal(0.2)
param w5 : bf16[32, 32] = normal(0.2)
h0 = tanh(x @ w0)
h = h0 + tanh(layernorm(h0, g1, b1, eps = 1e-3) @ w1) @ w2
h2 = h + rmsnorm(h, g2, eps = 1e-3) @ w3
y = cast(h2, bf16) @ w5
y2 = y + layernorm(y, g3, b3, eps = 1e-2) @ w4
hz = tanh(z @ wz)
yz = hz + layernorm(hz, gz, bz, eps = 1e-3) @ wz2
loss = mean(cast(y2, f32) * cast(y2, f32)) + mean(yz * yz)
output loss
train loss with adamw(lr = 0.01, eps = 1e-3)
