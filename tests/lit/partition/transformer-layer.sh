# A transformer layer with the attention heads and the MLP split over tp
# (Megatron): exactly 2 all_reduces per layer in the forward, each of local
# tokens x model dim elements ((B / dp) x S x D).
# RUN: %shardc %s --mesh 2x2 --report json | FileCheck %s --check-prefix=M22
# RUN: %shardc %s --mesh 2x4 --report json | FileCheck %s --check-prefix=M22
# RUN: %shardc %s --mesh 1x4 -D L=3 --report json | FileCheck %s --check-prefix=L3
# M22: "collectives": [{"kind": "all_reduce", "axes": ["tp"], "dtype": "f32", "elements": 65536, "phase": "forward"}, {"kind": "all_reduce", "axes": ["tp"], "dtype": "f32", "elements": 65536, "phase": "forward"}, {"kind": "all_reduce", "axes": ["tp"], "dtype": "f32", "elements": 65536, "phase": "forward"}, {"kind": "all_reduce", "axes": ["tp"], "dtype": "f32", "elements": 65536, "phase": "forward"}]}]}
# L3-COUNT-6: {"kind": "all_reduce", "axes": ["tp"], "dtype": "f32", "elements": 131072, "phase": "forward"}
# L3-NOT: "kind"
mesh dp, tp
let B = 8, S = 64, D = 256, NH = 8, HD = D / NH, F = 4 * D, L = 2
input x : f32[B, S, D] shard(dp, _, _)

block attn(x : f32[B, S, D]) -> f32[B, S, D] {
    param ln_g : f32[D] = ones
    param ln_b : f32[D] = zeros
    param wq : f32[D, D] shard(_, tp) = normal(0.02)
    param wk : f32[D, D] shard(_, tp) = normal(0.02)
    param wv : f32[D, D] shard(_, tp) = normal(0.02)
    param wo : f32[D, D] shard(tp, _) = normal(0.02)
    h = layernorm(x, ln_g, ln_b)
    q = transpose(reshape(h @ wq, [B, S, NH, HD]), [0, 2, 1, 3])
    k = transpose(reshape(h @ wk, [B, S, NH, HD]), [0, 2, 1, 3])
    v = transpose(reshape(h @ wv, [B, S, NH, HD]), [0, 2, 1, 3])
    o = reshape(transpose(attention(q, k, v), [0, 2, 1, 3]), [B, S, D])
    return o @ wo
}

block mlp(x : f32[B, S, D]) -> f32[B, S, D] {
    param w1 : f32[D, F] shard(_, tp) = normal(0.02)
    param w2 : f32[F, D] shard(tp, _) = normal(0.02)
    return gelu(x @ w1) @ w2
}

repeat L as layers {
    x = x + attn(x)
    x = x + mlp(x)
}
output x
