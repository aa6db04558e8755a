# llama.sh: a Llama-3-style decoder. RMSNorm before each block; rotary
# position embeddings, their tables made from arange, sin and cos and each
# head's halves rotated with slices and a concat; grouped-query attention
# (H query heads reading G key/value heads); a SwiGLU MLP; the token
# embedding tied to the output layer; AdamW with warmup, cosine decay and
# gradient clipping.
# Data parallel over dp; Megatron tensor parallel over tp: the query heads,
# the key/value heads (G divides by tp), the MLP's hidden units and the
# vocabulary are split over tp.
mesh dp, tp

let B = 8                       # sequences per batch
let S = 128                     # sequence length
let D = 256                     # model width
let H = 8, G = 2, E = D / H     # query heads, key/value heads, head width
let F = 688                     # MLP width (about 8/3 D)
let V = 1024                    # vocabulary
let L = 4                       # layers
let THETA = 500000              # the rotary base
let WARMUP = 100, STEPS = 2000  # the learning rate's warmup and decay

input  tokens  : i32[B, S]  shard(dp, _)
input  targets : i32[B, S]  shard(dp, _)

param  emb : f32[V, D] shard(tp, _) = normal(0.02)   # tied: input and output

# The rotary tables [S, E]: position p and frequency THETA^(-2i/E), the
# angles repeated for both halves of a head (Hugging Face's layout).
pos = reshape(cast(arange(S), f32), [S, 1])
inv = exp(cast(arange(E / 2), f32) * (-2.0 * log(THETA) / E))
ang = pos * reshape(inv, [1, E / 2])
cs  = concat([cos(ang), cos(ang)], axis = 1)
sn  = concat([sin(ang), sin(ang)], axis = 1)

# Causal grouped-query self-attention with rotary embeddings.
block attn(x : f32[B, S, D], cs : f32[S, E], sn : f32[S, E]) -> f32[B, S, D] {
    param  norm : f32[D]        = ones
    param  wq   : f32[D, H * E] shard(_, tp) = normal(0.02)
    param  wk   : f32[D, G * E] shard(_, tp) = normal(0.02)
    param  wv   : f32[D, G * E] shard(_, tp) = normal(0.02)
    param  wo   : f32[H * E, D] shard(tp, _) = normal(0.02)

    h = rmsnorm(x, norm, eps = 1e-5)
    q = transpose(reshape(h @ wq, [B, S, H, E]), [0, 2, 1, 3])   # [B, H, S, E]
    k = transpose(reshape(h @ wk, [B, S, G, E]), [0, 2, 1, 3])   # [B, G, S, E]
    v = transpose(reshape(h @ wv, [B, S, G, E]), [0, 2, 1, 3])
    q = q * cs + concat([-q[:, :, :, E / 2:], q[:, :, :, :E / 2]], axis = -1) * sn
    k = k * cs + concat([-k[:, :, :, E / 2:], k[:, :, :, :E / 2]], axis = -1) * sn
    a = attention(q, k, v, causal = true)
    return reshape(transpose(a, [0, 2, 1, 3]), [B, S, H * E]) @ wo
}

# The SwiGLU feed-forward network.
block mlp(x : f32[B, S, D]) -> f32[B, S, D] {
    param  norm : f32[D]    = ones
    param  w1   : f32[D, F] shard(_, tp) = normal(0.02)   # gate
    param  w3   : f32[D, F] shard(_, tp) = normal(0.02)   # up
    param  w2   : f32[F, D] shard(tp, _) = normal(0.02)   # down

    h = rmsnorm(x, norm, eps = 1e-5)
    return (silu(h @ w1) * (h @ w3)) @ w2
}

x = embedding(emb, tokens)      # [B, S, D]

repeat L as layers {
    x = x + attn(x, cs, sn)
    x = x + mlp(x)
}

param  norm : f32[D] = ones
logits = rmsnorm(x, norm, eps = 1e-5) @ transpose(emb)     # [B, S, V]
loss   = cross_entropy(logits, targets)

output loss
train loss with adamw(lr = 3e-4, beta1 = 0.9, beta2 = 0.95, eps = 1e-8, wd = 0.1, clip = 1.0,
                      warmup = WARMUP, decay = cosine, steps = STEPS, min_lr = 3e-5)
