# attn_f32.sh: f32 attention on tensor cores (each f32 as three bf16 parts,
# codegen/cuda_ops.c's cg_attention_x3), forward and backward, where the
# other models do not take it: queries split over a (on a mesh of 2 the
# kernels read the rows' positions, causal to their global position) and
# q, k and v transposes of [B, S, H, d] folded into the ops (heads inner).
# Trained: the forward with its lse, attn_delta, attn_dq and the attn_dk
# and attn_dv pair. test_kernel_emulate runs every kernel against the CPU
# backend on a mesh of 2.
mesh a
let B = 2, H = 2, S = 40, T = 72, D = 32
input q : f32[B, H, S, D] shard(_, _, a, _)
input k : f32[B, H, T, D]
input v : f32[B, H, T, D]
input x : f32[B, S, 64]
param wq : f32[D, D] = normal(0.2)
param wx : f32[64, 64] = normal(0.2)
o = attention(q @ wq, k, v, causal = true)
y = x @ wx
yh = transpose(reshape(y, [B, S, H, D]), [0, 2, 1, 3])
r = attention(yh, yh, yh, causal = true)
rr = reshape(transpose(r, [0, 2, 1, 3]), [B, S, 64])
loss = mean(o * o) + mean(rr * rr)
output o, loss
train loss with sgd(lr = 0.1)
