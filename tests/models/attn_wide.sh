# attn_wide.sh: bf16 attention of head width 128 on tensor cores, whose key
# tiles do not fit twice in a block's 48 KiB of shared memory: its kernels
# on mma.sync stage each tile between two barriers (32 keys a tile), where
# attn_bf16.sh's narrower heads take two copies of the tiles, each next
# one copied by cp.async while this one is used. 40 queries against 72
# keys, causal, trained (the forward with its lse, attn_delta, attn_dq and
# the attn_dk and attn_dv pair). test_kernel_emulate runs every kernel
# against the CPU backend; tests/gpu/run.sh runs the model on a GPU.
mesh a
let B = 1, H = 2, S = 40, T = 72, D = 128
input q : bf16[B, H, S, D]
input k : bf16[B, H, T, D]
input v : bf16[B, H, T, D]
input u : f32[B, H, S, D]
param wq : bf16[D, D] = normal(0.05)
param wk : bf16[D, D] = normal(0.05)
param wv : bf16[D, D] = normal(0.05)
o = attention(q @ wq, k @ wk, v @ wv, causal = true)
loss = mse(cast(o, f32), u)
output o, loss
train loss with sgd(lr = 0.1)
