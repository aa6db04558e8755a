mesh dp, pp = 2, tp
let B = 8, S = 4, D = 8, V = 32, L = 4
input ids : i32[B, S] shard(dp, _)
input labels : i32[B, S] shard(dp, _)
param emb : f32[V, D] shard(tp, _) = normal(0.02)
block layer(x : f32[B, S, D]) -> f32[B, S, D] {
    param g : f32[D] = ones
    param b : f32[D] = zeros
    param wq : f32[D, D] = normal(0.02)
    h = layernorm(x, g, b, eps = 1e-5)
    q = h @ wq
    return attention(q, h, h, causal = true)
}
x = embedding(emb, ids)
repeat L as layers over pp { x = x + layer(x) }
pipeline microbatches 4 schedule 1f1b
logits = x @ transpose(emb, [1, 0])
loss = cross_entropy(logits, labels)
output loss
train loss with adamw(lr = 3e-4, beta1 = 0.9, wd = 0.1) zero 2 over dp
