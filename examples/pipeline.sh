# pipeline.sh: the small GPT of transformer.sh with its layers split into
# pipeline stages over pp, 4 microbatches per step on the 1F1B schedule.
# Data parallel over dp, Megatron tensor parallel over tp, pipeline over pp:
# `shardc pipeline.sh --mesh 2x2x2` is 3D parallelism on 8 ranks.
mesh dp, pp, tp

let B = 8                  # sequences per batch
let S = 128                # sequence length
let D = 256                # model width
let NH = 8, HD = D / NH    # attention heads and head width
let F = 4 * D              # MLP width
let V = 1024               # vocabulary
let L = 4                  # layers

input  tokens  : i32[B, S]  shard(dp, _)
input  targets : i32[B, S]  shard(dp, _)

param  wte : f32[V, D] = normal(0.02)    # token embedding
param  wpe : f32[S, D] = normal(0.01)    # position embedding

# Causal multi-head self-attention, pre-norm.
block attn(x : f32[B, S, D]) -> f32[B, S, D] {
    param  ln_g : f32[D]    = ones
    param  ln_b : f32[D]    = zeros
    param  wq   : f32[D, D] shard(_, tp) = normal(0.02)
    param  wk   : f32[D, D] shard(_, tp) = normal(0.02)
    param  wv   : f32[D, D] shard(_, tp) = normal(0.02)
    param  wo   : f32[D, D] shard(tp, _) = normal(0.02)

    h = layernorm(x, ln_g, ln_b)
    q = transpose(reshape(h @ wq, [B, S, NH, HD]), [0, 2, 1, 3])   # [B, NH, S, HD]
    k = transpose(reshape(h @ wk, [B, S, NH, HD]), [0, 2, 1, 3])
    v = transpose(reshape(h @ wv, [B, S, NH, HD]), [0, 2, 1, 3])
    a = attention(q, k, v, causal = true)
    o = reshape(transpose(a, [0, 2, 1, 3]), [B, S, D])
    return o @ wo
}

# The feed-forward network, pre-norm.
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

x = embedding(wte, tokens) + wpe     # [B, S, D]

repeat L as layers over pp {
    x = x + attn(x)
    x = x + mlp(x)
}

param  lnf_g : f32[D]    = ones
param  lnf_b : f32[D]    = zeros
param  wlm   : f32[D, V] shard(_, tp) = normal(0.02)

logits = layernorm(x, lnf_g, lnf_b) @ wlm      # [B, S, V]
loss   = cross_entropy(logits, targets)

output loss
pipeline microbatches 4 schedule 1f1b
train loss with adamw(lr = 3e-4, beta1 = 0.9, beta2 = 0.95, eps = 1e-8, wd = 0.1)
