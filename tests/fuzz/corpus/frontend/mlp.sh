mesh dp, tp
let B = 8, D = 16, H = 4 * D
input  x  : f32[B, D]   shard(dp, _)
input  y  : f32[B, D]   shard(dp, _)
param  w1 : f32[D, H]   shard(_, tp)   = normal(0.02)
param  b1 : f32[H]      shard(tp)      = zeros
param  w2 : f32[H, D]   shard(tp, _)   = normal(0.02)
h    = gelu(x @ w1 + b1)
out  = h @ w2
loss = mse(out, y)
output out, loss
train loss with sgd(lr = 0.01)
