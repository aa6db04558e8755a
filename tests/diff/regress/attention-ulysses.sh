# diff: attention under Ulysses' sequence parallelism (x split along the
# sequence, the result along the heads, the forward's q, k and v turned by
# all-to-all), trained: the backward's probabilities on the forward
# attention's rows (propagate.c), v turned by the all-to-all of v where
# autodiff turned v's transpose, the statistics from the forward though
# the backward turns q, k and v again (passes/attn_grad.c)
# diff-mesh: 1x4
# diff-mesh: 2x2
# diff-mesh: 4x1
# diff-steps: 3
mesh dp, tp
input x      : f32[4, 4, 32, 16] shard(dp, _, tp, _)
input target : f32[4, 4, 32, 16] shard(dp, tp, _, _)
param wq : f32[16, 16] = normal(0.5)
param wk : f32[16, 16] = normal(0.5)
param wv : f32[16, 16] = normal(0.5)
y = attention(x @ wq, x @ wk, x @ wv, causal = true) shard(dp, tp, _, _)
loss = mse(y, target)
output y, loss
train loss with adamw(lr = 0.05)
