# diff: attention with its queries split along the sequence and its keys and
# values gathered (context parallelism), trained: the backward's attn_dk
# partial before the sum over the ranks of the query rows that autodiff's
# scale had followed, v gathered from its shard where autodiff gathered v's
# transpose, the statistics from the forward though the backward gathers k
# again (passes/attn_grad.c)
# diff-mesh: 1x4
# diff-mesh: 2x2
# diff-mesh: 4x1
# diff-steps: 3
mesh dp, tp
input x      : f32[4, 2, 16, 8] shard(dp, _, tp, _)
input target : f32[4, 2, 16, 8] shard(dp, _, tp, _)
param wq : f32[8, 8] = normal(0.5)
param wk : f32[8, 8] = normal(0.5)
param wv : f32[8, 8] = normal(0.5)
y = attention(x @ wq, x @ wk, x @ wv, causal = true) shard(dp, _, tp, _)
loss = mse(y, target)
output y, loss
train loss with adamw(lr = 0.05)
