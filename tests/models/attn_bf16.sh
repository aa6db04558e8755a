# attn_bf16.sh: bf16 and f16 attention and its backward on tensor cores
# (codegen/cuda_ops.c's WMMA kernels) at shapes that do not fill their
# tiles: 40 queries (a block of 64 rows and a warp of 16 partly past them)
# against 72 keys (a last key tile partly past them), head width 32 and
# value width 48 (a multiple of 16 that is not of 32), causal and plain,
# and one with the heads inner (q, k and v transposes of [B, S, H, d]
# that passes/fold.c folds into the op). Trained: attn_lse (in the
# forward's kernel), attn_delta, attn_dq, attn_dk and attn_dv, and p's
# attn_dk and attn_dv as one kernel (a pair). gb and gh, whose results are
# read twice, read q, k and v as stored but write their results as they
# compute them (heads_inner = [q, k, v]), as their lse reads q and k, which
# the forward's kernel stores (tests/models/attn_lse.ir has attn_lse
# alone). ra's attention,
# which a recompute block returns, has its backward's statistics from
# attn_stats (its q is recomputed, not the forward's). The f16 attention's queries are split over a: on a mesh of 2 its
# kernels read the rows' positions (the keys a row sees end at its global
# position). test_kernel_emulate runs every kernel against the CPU backend
# on meshes 1 and 2; tests/gpu/run.sh runs the model on a GPU against the
# CPU backend.
mesh a
let B = 2, H = 2, S = 40, T = 72, D = 32, DV = 48
input q : bf16[B, H, S, D]
input k : bf16[B, H, T, D]
input v : bf16[B, H, T, DV]
input x : bf16[B, S, 64]
input qh : f16[B, H, S, D] shard(_, _, a, _)
input kh : f16[B, H, T, D]
input vh : f16[B, H, T, D]
input u : f32[B, H, S, DV]
input xh : f16[B, S, 64]
param wq : bf16[D, D] = normal(0.2)
param wk : bf16[D, D] = normal(0.2)
param wv : bf16[DV, DV] = normal(0.2)
param wx : bf16[64, 64] = normal(0.2)
param wh : f16[D, D] = normal(0.2)
param wz : bf16[64, 64] = normal(0.2)
param wzh : f16[64, 64] = normal(0.2)
recompute block ra(h : bf16[B, S, 64]) -> bf16[B, H, S, D] {
    param wr : bf16[64, 64] = normal(0.2)
    t = transpose(reshape(h @ wr, [B, S, H, D]), [0, 2, 1, 3])
    return attention(t, t, t, causal = true)
}
o = attention(q @ wq, k, v, causal = true)
p = attention(q, k @ wk, v @ wv)
y = x @ wx
yh = transpose(reshape(y, [B, S, H, D]), [0, 2, 1, 3])
r = attention(yh, yh, yh, causal = true)
rr = reshape(transpose(r, [0, 2, 1, 3]), [B, S, 64])
f = attention(qh @ wh, kh, vh, causal = true)
zb = transpose(reshape(x @ wz, [B, S, H, D]), [0, 2, 1, 3])
gb = attention(zb, zb, zb, causal = true)
zh = transpose(reshape(xh @ wzh, [B, S, H, D]), [0, 2, 1, 3])
gh = attention(zh, zh, zh)
g = (cast(gb, f32) * cast(gb, f32) + cast(reshape(transpose(gb, [0, 2, 1, 3]), [B, H, S, D]), f32) +
     cast(gh, f32) * cast(gh, f32) + cast(reshape(transpose(gh, [0, 2, 1, 3]), [B, H, S, D]), f32) +
     cast(ra(x), f32))
loss = mse(cast(o + p, f32), u) + mean(cast(rr, f32)) + mean(cast(f * f, f32)) + mean(g)
output o, p, f, loss
train loss with sgd(lr = 0.1)
