# diff: grouped-query attention in training: 4 query heads over tp reading
# 2 key/value heads (split over tp as well) and 1 (multi-query: not
# divisible, so gathered), a scale, and an additive learned mask with a
# causal one (the scores made whole), on 2x2 and 1x4 (the 1 key/value head
# gathered over tp 4; the 2, split where tp divides them)
# diff-mesh: 2x2
# diff-mesh: 1x4
mesh dp, tp
input x : f32[4, 8, 16] shard(dp, _, _)
input t : f32[4, 8, 16] shard(dp, _, _)
param wq : f32[16, 16] shard(_, tp) = normal(0.3)
param wk : f32[16, 8] = normal(0.3)
param wk1 : f32[16, 4] = normal(0.3)
param wv : f32[16, 8] = normal(0.3)
param wo : f32[16, 16] shard(tp, _) = normal(0.3)
param bias : f32[8, 8] = normal(0.5)
q = transpose(reshape(x @ wq, [4, 8, 4, 4]), [0, 2, 1, 3])
k = transpose(reshape(x @ wk, [4, 8, 2, 4]), [0, 2, 1, 3])
v = transpose(reshape(x @ wv, [4, 8, 2, 4]), [0, 2, 1, 3])
k1 = transpose(reshape(x @ wk1, [4, 8, 1, 4]), [0, 2, 1, 3])
a = attention(q, k, v, causal = true, scale = 0.3)
b = attention(q, k1, k1, causal = true, mask = bias)
o = reshape(transpose(a + b, [0, 2, 1, 3]), [4, 8, 16])
loss = mse(o @ wo, t)
output loss
train loss with adamw(lr = 0.01)
