# diff: stop_gradient: a param read only under it keeps its value, a param
# read both under it and around it learns from the direct use alone
# (AdamW), on a 2x2 mesh and split along the hidden units
# diff-mesh: 2x2
# diff-mesh: 1x4
mesh dp, tp
input x : f32[8, 16] shard(dp, _)
input t : f32[8, 16] shard(dp, _)
param w : f32[16, 32] shard(_, tp) = normal(0.3)
param v : f32[32, 16] shard(tp, _) = normal(0.3)
param u : f32[16, 16] = normal(0.3)
h = tanh(x @ w)
y = h @ v
g = stop_gradient(y @ u)
loss = mse(y + g * stop_gradient(h @ v), t)
output g, loss, u, v
train loss with adamw(lr = 0.01)
