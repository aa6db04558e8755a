# attn_shapes.sh: attention at shapes that do not fill the tiled kernel's
# tiles: head width 80 and value width 48 (padded columns), 200 queries
# against 136 keys (the causal mask aligned to the end, a last key tile
# partly past the keys), one causal and one plain attention, and their
# gradients through training: attention's backward ops (attn_stats,
# attn_dq, attn_dk, attn_dv) for o and p, and for r, whose v alone needs
# a gradient, autodiff's attn_probs form, which passes/attn_grad.c keeps.
mesh a
let B = 2, H = 3       # batch and heads (test_kernel_emulate takes 1 and 1)
input q : f32[B, H, 200, 80]
input k : f32[B, H, 136, 80]
input v : f32[B, H, 136, 48]
input u : f32[B, H, 200, 48]
param w : f32[80, 80] = normal(0.1)
param wv : f32[48, 48] = normal(0.1)
o = attention(q @ w, k, v, causal = true)
p = attention(q, k @ w, v)
r = attention(q, k, v @ wv, causal = true)
loss = mse(o + p + r, u)
output o, p, loss
train loss with sgd(lr = 0.1)
