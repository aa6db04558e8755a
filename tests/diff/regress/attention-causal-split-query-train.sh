# diff: training through causal attention with the sequence split (forward and the gradient's attn_probs) masked by local rows, so the grads of q, k and v were wrong
# diff-mesh: 2
# diff-mesh: 4
mesh a
input x : f32[8, 4] shard(a, _)
param wq : f32[4, 4] = normal(0.5)
param wk : f32[4, 4] = normal(0.5)
param wv : f32[4, 4] = normal(0.5)
o = attention(x @ wq, x @ wk, x @ wv, causal = true)
loss = mse(o, x)
output o, loss
train loss with adamw(lr = 0.01)
