# mlp.sh: a two-layer MLP, data parallel over dp, tensor parallel over tp
mesh dp, tp                          # axis sizes come from --mesh 8x4

let B = 64, D = 1024, H = 4 * D      # integer constants; -D B=128 overrides

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
