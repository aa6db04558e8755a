# diff: Megatron sequence parallelism: the residual stream split over tp along the sequence, the weights over tp as annotated; the activations gathered before each column-parallel pair, the row-parallel products (with a bias after) and the column-parallel input gradients reduce-scattered (propagate.c scatter_partials), the token embedding's gradient from rows gathered along the sequence; and with --keep-gathered, the backward reading the activations the forward gathered
# diff-variant: --keep-gathered
# diff-mesh: 1x4
# diff-mesh: 2x2
mesh dp, tp

let B = 4
let S = 8
let D = 16
let NH = 4, HD = D / NH
let F = 4 * D
let V = 32
let L = 2

input  tokens  : i32[B, S]  shard(dp, _)
input  targets : i32[B, S]  shard(dp, _)

param  wte : f32[V, D] = normal(0.02)
param  wpe : f32[S, D] = normal(0.01)
block attn(x : f32[B, S, D]) -> f32[B, S, D] {
    param  ln_g : f32[D]    = ones
    param  ln_b : f32[D]    = zeros
    param  wq   : f32[D, D] shard(_, tp) = normal(0.02)
    param  wk   : f32[D, D] shard(_, tp) = normal(0.02)
    param  wv   : f32[D, D] shard(_, tp) = normal(0.02)
    param  wo   : f32[D, D] shard(tp, _) = normal(0.02)

    h = layernorm(x, ln_g, ln_b)
    q = transpose(reshape(h @ wq, [B, S, NH, HD]), [0, 2, 1, 3])
    k = transpose(reshape(h @ wk, [B, S, NH, HD]), [0, 2, 1, 3])
    v = transpose(reshape(h @ wv, [B, S, NH, HD]), [0, 2, 1, 3])
    a = attention(q, k, v, causal = true)
    o = reshape(transpose(a, [0, 2, 1, 3]), [B, S, D])
    return o @ wo
}
block mlp(x : f32[B, S, D]) -> f32[B, S, D] {
    param  ln_g : f32[D]    = ones
    param  ln_b : f32[D]    = zeros
    param  w1   : f32[D, F] shard(_, tp) = normal(0.02)
    param  b1   : f32[F]    shard(tp)    = zeros
    param  w2   : f32[F, D] shard(tp, _) = normal(0.02)
    param  b2   : f32[D]    = zeros

    h = layernorm(x, ln_g, ln_b)
    return gelu(h @ w1 + b1) @ w2 + b2
}

x = embedding(wte, tokens) + wpe

repeat L as layers {
    x = (x + attn(x)) shard(dp, tp, _)
    x = (x + mlp(x)) shard(dp, tp, _)
}

param  lnf_g : f32[D]    = ones
param  lnf_b : f32[D]    = zeros
param  wlm   : f32[D, V] shard(_, tp) = normal(0.02)

logits = layernorm(x, lnf_g, lnf_b) @ wlm
loss   = cross_entropy(logits, targets)

output loss
train loss with adamw(lr = 3e-4, beta1 = 0.9, beta2 = 0.95, eps = 1e-8, wd = 0.1)
