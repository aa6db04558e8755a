# diff: collectives moved to where they send least (passes/combine.c): two partial sums added before one all_reduce, an all_reduce and slice made a reduce_scatter, a weight gradient and a norm's gain summed over the rows before they are reduced
# diff-mesh: 2x2
# diff-mesh: 1x4
mesh dp, tp
input x : f32[4, 8, 16] shard(dp, tp, _)
input t : f32[4, 8, 16] shard(dp, tp, _)
param g : f32[16] = normal(1.0)
param a : f32[16, 32] shard(_, tp) = normal(0.2)
param b : f32[16, 32] shard(_, tp) = normal(0.2)
param c : f32[32, 16] shard(tp, _) = normal(0.2)
h = rmsnorm(tanh(x), g, eps = 1e-3)
u = (h @ a) * sigmoid(h @ b) shard(dp, _, tp)
y = (u @ c) shard(dp, tp, _)
z = (h @ a) shard(dp, _, tp)
loss = mse(y, t) + 0.1 * mean(mean(mean(z, axis = -1), axis = -1), axis = -1)
output y
train loss with adamw(lr = 0.01)
