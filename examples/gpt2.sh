# gpt2.sh: GPT-2 as Hugging Face's GPT2LMHeadModel computes it: learned
# position embeddings; pre-norm blocks (layernorm with gain and bias, eps
# 1e-5); attention and MLP with their biases; the MLP's GELU in the tanh form
# GPT-2 uses ("gelu_new"), which is the language's `gelu`; a final layernorm
# and the LM head tied to the token embedding. scripts/hf_import.py turns a
# Hugging Face GPT-2 checkpoint into these names (docs/huggingface.md).
# Data parallel over dp; Megatron tensor parallel over tp: the attention
# heads and the MLP's hidden units are split over tp. The token embedding
# (and so the LM head) stays whole on every rank: GPT-2's vocabulary,
# 50257 = 29 x 1733, divides by no usual tp.
mesh dp, tp

let B = 8                  # sequences per batch
let S = 128                # sequence length
let P = S                  # rows of the position table (GPT-2: 1024); S <= P
let D = 256                # model width
let NH = 8, HD = D / NH    # attention heads and head width
let F = 4 * D              # MLP width
let V = 1024               # vocabulary
let L = 4                  # layers

input  tokens  : i32[B, S]  shard(dp, _)
input  targets : i32[B, S]  shard(dp, _)

param  wte : f32[V, D] = normal(0.02)    # token embedding, tied to the LM head
param  wpe : f32[P, D] = normal(0.02)    # position embedding

# Causal multi-head self-attention, pre-norm: GPT-2's c_attn (split into
# wq, wk, wv and their biases) and c_proj (wo, bo).
block attn(x : f32[B, S, D]) -> f32[B, S, D] {
    param  ln_g : f32[D]    = ones
    param  ln_b : f32[D]    = zeros
    param  wq   : f32[D, D] shard(_, tp) = normal(0.02)
    param  bq   : f32[D]    shard(tp)    = zeros
    param  wk   : f32[D, D] shard(_, tp) = normal(0.02)
    param  bk   : f32[D]    shard(tp)    = zeros
    param  wv   : f32[D, D] shard(_, tp) = normal(0.02)
    param  bv   : f32[D]    shard(tp)    = zeros
    param  wo   : f32[D, D] shard(tp, _) = normal(0.02)
    param  bo   : f32[D]    = zeros

    h = layernorm(x, ln_g, ln_b, eps = 1e-5)
    q = transpose(reshape(h @ wq + bq, [B, S, NH, HD]), [0, 2, 1, 3])   # [B, NH, S, HD]
    k = transpose(reshape(h @ wk + bk, [B, S, NH, HD]), [0, 2, 1, 3])
    v = transpose(reshape(h @ wv + bv, [B, S, NH, HD]), [0, 2, 1, 3])
    a = attention(q, k, v, causal = true)                               # scale 1/sqrt(HD)
    o = reshape(transpose(a, [0, 2, 1, 3]), [B, S, D])
    return o @ wo + bo
}

# The feed-forward network, pre-norm: GPT-2's c_fc (w1, b1) and c_proj
# (w2, b2).
block mlp(x : f32[B, S, D]) -> f32[B, S, D] {
    param  ln_g : f32[D]    = ones
    param  ln_b : f32[D]    = zeros
    param  w1   : f32[D, F] shard(_, tp) = normal(0.02)
    param  b1   : f32[F]    shard(tp)    = zeros
    param  w2   : f32[F, D] shard(tp, _) = normal(0.02)
    param  b2   : f32[D]    = zeros

    h = layernorm(x, ln_g, ln_b, eps = 1e-5)
    return gelu(h @ w1 + b1) @ w2 + b2
}

x = embedding(wte, tokens) + wpe[:S]     # [B, S, D]: positions 0 to S - 1

repeat L as layers {
    x = x + attn(x)
    x = x + mlp(x)
}

param  lnf_g : f32[D] = ones
param  lnf_b : f32[D] = zeros

logits = layernorm(x, lnf_g, lnf_b, eps = 1e-5) @ transpose(wte)    # [B, S, V]
loss   = cross_entropy(logits, targets)

output loss
train loss with adamw(lr = 3e-4, beta1 = 0.9, beta2 = 0.95, eps = 1e-8, wd = 0.1)
