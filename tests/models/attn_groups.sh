# attn_groups.sh: grouped-query attention (LANGUAGE.md §12) as
# passes/fold.c gives it to the kernels: k and v with fewer heads than q,
# query head h reading key head h / (H / G), and attn_dk's and attn_dv's
# results each key head's gradient summed over the query heads of its
# group. 40 queries against 72 keys (tiles partly past both), head width
# 32, four query heads: o in f32 on two key heads (for sm_80 as bf16 parts
# on tensor cores, for sm_75 on the CUDA cores), its v a transpose of [B,
# T, heads, d] and its result transposed back, so that those alone (and
# dy, and dv's result) hold their heads inner; p in bf16 on one key head
# (multi-query), not causal; r in bf16 with the heads inner too (q, k and
# v transposes of [B, S, heads, d], the result transposed back: the
# transposes folded after the groups); f in f16 on two key heads (WMMA for
# sm_75). On a mesh of 2, o's heads are split over a (a rank's two query
# heads read its one key head), f's batch. Trained, so that each has its backward (attn_lse in the
# forward's kernel, attn_delta, attn_dq, and attn_dk with attn_dv as one
# kernel). test_kernel_emulate runs every kernel against the CPU backend
# on meshes 1 and 2, for sm_80 and sm_75.
mesh a
let B = 2, H = 4, S = 40, T = 72, D = 32
input q : f32[B, H, S, D]
input k : f32[B, 2, T, D]
input v : f32[B, T, 2, D]
input qb : bf16[B, H, S, D]
input kb : bf16[B, 1, T, D]
input x : bf16[B, S, 128]
input qh : f16[B, H, S, D] shard(a, _, _, _)
input kh : f16[B, 2, T, D]
input u : f32[B, H, S, D]
input ut : f32[B, S, H, D]
param wq : f32[D, D] = normal(0.2)
param wk : f32[D, D] = normal(0.2)
param wv : f32[D, D] = normal(0.2)
param wb : bf16[D, D] = normal(0.2)
param wx : bf16[128, 128] = normal(0.2)
param wy : bf16[128, 64] = normal(0.2)
param wh : f16[D, D] = normal(0.2)
o = transpose(attention(q @ wq, k @ wk, transpose(v @ wv, [0, 2, 1, 3]), causal = true),
              [0, 2, 1, 3])
p = attention(qb @ wb, kb @ wb, kb, causal = false)
yq = transpose(reshape(x @ wx, [B, S, H, D]), [0, 2, 1, 3])
yk = transpose(reshape(x @ wy, [B, S, 2, D]), [0, 2, 1, 3])
r = attention(yq, yk, yk, causal = true)
rr = reshape(transpose(r, [0, 2, 1, 3]), [B, S, 128])
f = attention(qh @ wh, kh @ wh, kh, causal = true)
loss = mse(o, ut) + mse(cast(p, f32), u) + mse(cast(f, f32), u) + mean(cast(rr * rr, f32))
output o, p, f, rr, loss
train loss with sgd(lr = 0.1)
