# attn_tiles.sh: bf16 attention on tensor cores with many tiles, and with
# tiles too large to keep twice. o's heads are 64 wide, with 136 queries
# and keys (three tiles of 64 each way, the last partly empty, causal): its
# kernels on mma.sync keep two copies of the other side's tiles and copy
# each next one by cp.async while this one is used, the forward, attn_dq
# through the keys, the attn_dk and attn_dv pair through the queries. w's
# heads are 128 wide (40 queries against 72 keys): its tiles do not fit
# twice in a block's 48 KiB, and each is staged between two barriers.
# Trained: the forwards with their lse, attn_delta, attn_dq and the pairs.
# test_kernel_emulate runs every kernel against the CPU backend;
# tests/gpu/run.sh runs the model on a GPU.
mesh a
let B = 1, H = 2, S = 136, D = 64, SW = 40, TW = 72, DW = 128
input q : bf16[B, H, S, D]
input k : bf16[B, H, S, D]
input v : bf16[B, H, S, D]
input u : f32[B, H, S, D]
input qw : bf16[B, H, SW, DW]
input kw : bf16[B, H, TW, DW]
input vw : bf16[B, H, TW, DW]
input uw : f32[B, H, SW, DW]
param wq : bf16[D, D] = normal(0.1)
param wk : bf16[D, D] = normal(0.1)
param wv : bf16[D, D] = normal(0.1)
param wqw : bf16[DW, DW] = normal(0.05)
param wkw : bf16[DW, DW] = normal(0.05)
param wvw : bf16[DW, DW] = normal(0.05)
o = attention(q @ wq, k @ wk, v @ wv, causal = true)
w = attention(qw @ wqw, kw @ wkw, vw @ wvw, causal = true)
loss = mse(cast(o, f32), u) + mse(cast(w, f32), uw)
output o, w, loss
train loss with sgd(lr = 0.1)
