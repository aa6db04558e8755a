# diff: attention computed on each rank's rows of the batch
# (passes/narrow.c), trained, from a generated program (seed 2900013):
# q, k and v whole on every rank (k and v one head of q's two), the
# attention's result then split along the batch over a; the forward
# attention runs on the rank's 4 sequences of 8, on slices of q, k and v
# diff-mesh: 2x2x1
# diff-inputs: batches
# diff-ids: labels 16
mesh a = 2, tp = 2, dp = 1
let B = 8, D = 16
input x0 : f32[B, D, B] shard(tp, a, _)
input labels : i32[B, B] shard(_, tp)
v1 = transpose(x0, [2, 0, 1])
v2 = reshape(v1, [B, 2, 4, D])
param w1 : f32[D, D] shard(tp, a) = normal(0.25)
param w2 : f32[D, D] = normal(0.25)
param w3 : f32[D, D] = normal(0.25)
v3 = reshape(attention(v2 @ w1, v2[:, :1] @ w2, v2[:, :1] @ w3, causal = true), [B, B, D]) shard(a, tp, _)
v4 = sum(v3, axis = -3, keepdims = true) shard(_, _, a)
param g4 : f32[D] = ones
param g5 : f32[D] shard(_) = zeros
param w6 : f32[D, D] shard(dp, tp) = uniform(-0.425, 0.425)
v5 = v3 + layernorm(v3, g4, g5, eps = 1e-3) @ w6
loss = cross_entropy(v5, labels)
output v1, v4, w6, loss
train loss with sgd(lr = 0.01, momentum = 0.9)
