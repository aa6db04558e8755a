# diff: attention whose keys' and values' heads are sliced as its queries'
# are split (kv whole), trained: the backward's v^T the slice of v's
# transpose, so attn_dq and attn_dk read a slice of v, the statistics from
# the forward (passes/attn_grad.c)
# diff-mesh: 2x1
# diff-mesh: 2x2
# diff-steps: 3
mesh dp, tp
input x  : f32[4, 2, 8, 16] shard(_, dp, _, _)
input kv : f32[4, 2, 8, 16] shard(_, _, _, _)
param w  : f32[16, 16] = normal(0.25)
y = attention(x @ w, kv @ w, kv, causal = false)
loss = mse(y, x)
output y, loss
train loss with sgd(lr = 0.1)
