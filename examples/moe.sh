# moe.sh: a Mixtral-style decoder: each layer's MLP is a mixture of X
# SwiGLU experts; a router sends every token to its top K = 2 experts,
# weighted by the softmax of those two logits. An expert takes at most C
# tokens of each sequence (GShard's capacity: first choices in token
# order, then second choices); a token past that is dropped by that expert
# and its residual carries it on. Attention is llama.sh's: rotary
# embeddings and grouped-query heads.
# Expert parallelism over dp: the experts are split over dp, and the
# tokens, split by sequence over dp, move to their experts' ranks and back
# by all-to-all. Each expert's hidden units are split over tp (Megatron),
# as are the attention heads. The loss adds Switch Transformer's
# load-balancing term, per sequence.
mesh dp, tp

let B = 8                       # sequences per batch (a routing group each)
let S = 64                      # sequence length
let D = 128                     # model width
let H = 8, G = 2, E = D / H     # query heads, key/value heads, head width
let X = 4, K = 2                # experts, experts per token
let C = 5 * S * K / (4 * X)     # capacity: 1.25 x an even share of a sequence
let F = 256                     # expert MLP width
let V = 256                     # vocabulary
let L = 2                       # layers
let THETA = 10000               # the rotary base

input  tokens  : i32[B, S]  shard(dp, _)
input  targets : i32[B, S]  shard(dp, _)

param  emb : f32[V, D] shard(tp, _) = normal(0.02)   # tied: input and output

pos = reshape(cast(arange(S), f32), [S, 1])
inv = exp(cast(arange(E / 2), f32) * (-2.0 * log(THETA) / E))
ang = pos * reshape(inv, [1, E / 2])
cs  = concat([cos(ang), cos(ang)], axis = 1)
sn  = concat([sin(ang), sin(ang)], axis = 1)

block attn(x : f32[B, S, D], cs : f32[S, E], sn : f32[S, E]) -> f32[B, S, D] {
    param  norm : f32[D]        = ones
    param  wq   : f32[D, H * E] shard(_, tp) = normal(0.02)
    param  wk   : f32[D, G * E] shard(_, tp) = normal(0.02)
    param  wv   : f32[D, G * E] shard(_, tp) = normal(0.02)
    param  wo   : f32[H * E, D] shard(tp, _) = normal(0.02)

    h = rmsnorm(x, norm, eps = 1e-5)
    q = transpose(reshape(h @ wq, [B, S, H, E]), [0, 2, 1, 3])
    k = transpose(reshape(h @ wk, [B, S, G, E]), [0, 2, 1, 3])
    v = transpose(reshape(h @ wv, [B, S, G, E]), [0, 2, 1, 3])
    q = q * cs + concat([-q[:, :, :, E / 2:], q[:, :, :, :E / 2]], axis = -1) * sn
    k = k * cs + concat([-k[:, :, :, E / 2:], k[:, :, :, :E / 2]], axis = -1) * sn
    a = attention(q, k, v, causal = true)
    return reshape(transpose(a, [0, 2, 1, 3]), [B, S, H * E]) @ wo
}

# The mixture of experts, and its load-balancing term.
block moe(x : f32[B, S, D]) -> (f32[B, S, D], f32[]) {
    param  norm : f32[D]       = ones
    param  wg   : f32[D, X]    = normal(0.02)                # the router
    param  w1   : f32[X, D, F] shard(dp, _, tp) = normal(0.02)   # gate
    param  w3   : f32[X, D, F] shard(dp, _, tp) = normal(0.02)   # up
    param  w2   : f32[X, F, D] shard(dp, tp, _) = normal(0.02)   # down

    h = rmsnorm(x, norm, eps = 1e-5)
    logits = h @ wg                                          # [B, S, X]
    v, i = topk(logits, K)                                   # [B, S, K]
    p = softmax(v, axis = -1)
    # each token's place in its experts' queues: first choices in token
    # order, then second choices after every first one
    m1 = one_hot(i[:, :, 0], X)                              # [B, S, X]
    m2 = one_hot(i[:, :, 1], X)
    q1 = cumsum(m1, axis = 1) - m1
    q2 = cumsum(m2, axis = 1) - m2 + sum(m1, axis = 1, keepdims = true)
    k1 = where(q1 < C, m1, 0.0)                              # kept within capacity
    k2 = where(q2 < C, m2, 0.0)
    d1 = reshape(k1, [B, S, X, 1]) * one_hot(cast(q1, i32), C)   # [B, S, X, C]
    d2 = reshape(k2, [B, S, X, 1]) * one_hot(cast(q2, i32), C)
    dispatch = reshape(d1 + d2, [B, S, X * C])
    combine = reshape(d1 * reshape(p[:, :, 0], [B, S, 1, 1]) +
                      d2 * reshape(p[:, :, 1], [B, S, 1, 1]), [B, S, X * C])
    # tokens to their experts: by sequence over dp, then by expert
    xe = transpose(dispatch, [0, 2, 1]) @ h                  # [B, X * C, D]
    xe = transpose(reshape(xe, [B, X, C, D]), [1, 0, 2, 3]) shard(dp, _, _, _)
    xe = reshape(xe, [X, B * C, D])
    ye = (silu(xe @ w1) * (xe @ w3)) @ w2                    # [X, B * C, D]
    ye = transpose(reshape(ye, [X, B, C, D]), [1, 0, 2, 3]) shard(dp, _, _, _)
    y = combine @ reshape(ye, [B, X * C, D])
    # Switch's balance, per routing group: X times the sum over experts of
    # the share of a sequence's choices each gets and its mean router
    # probability there, averaged over the sequences (a mean of per-row
    # terms, so a pipeline's microbatches add up to it)
    share = mean(m1 + m2, axis = 1) / K                      # [B, X]
    prob = mean(softmax(logits, axis = -1), axis = 1)
    return y, X * mean(sum(share * prob, axis = 1))
}

x = embedding(emb, tokens)
aux = 0.0
repeat L as layers {
    x = x + attn(x, cs, sn)
    y, a = moe(x)
    x = x + y
    aux = aux + a
}

param  norm : f32[D] = ones
logits = rmsnorm(x, norm, eps = 1e-5) @ transpose(emb)
loss   = cross_entropy(logits, targets) + 0.01 * aux / L

output loss
train loss with adamw(lr = 3e-4, beta1 = 0.9, beta2 = 0.95, eps = 1e-8, wd = 0.1, clip = 1.0)
