# vocab_parallel.sh: Megatron-LM's vocabulary-parallel embedding and
# cross-entropy, and normalisations over a tensor-parallel hidden dim
# (tests/CMakeLists.txt runs and trains it on several meshes against the
# unsharded run and PyTorch, tests/oracle/vocab_parallel.py).
#   - the table is split over tp along the vocabulary: each rank looks up
#     the ids in its rows, zeros for the others, and an all_reduce sums them;
#     its gradient is made where the rows are;
#   - layernorm, the amax, softmax and rmsnorm run on the hidden dim split
#     over tp (after the column-parallel w1) with all-reduced statistics;
#   - the lm head is column-parallel, so the logits reach cross_entropy
#     split along the classes.
mesh dp, tp

let B = 4, S = 8, D = 32, H = 64, V = 128

input  tokens  : i32[B, S]  shard(dp, _)
input  targets : i32[B, S]  shard(dp, _)

param  wte : f32[V, D] shard(tp, _) = normal(0.02)
param  w1  : f32[D, H] shard(_, tp) = normal(0.02)
param  g1  : f32[H]    = ones
param  b1  : f32[H]    = zeros
param  g2  : f32[H]    = ones
param  w2  : f32[H, D] shard(tp, _) = normal(0.02)
param  wlm : f32[D, V] shard(_, tp) = normal(0.02)

x = embedding(wte, tokens)                       # [B, S, D]
h = layernorm(x @ w1, g1, b1)                    # [B, S, H], H split over tp
h = h - amax(h, axis = -1, keepdims = true)
p = softmax(h)
r = rmsnorm(h + p, g2)
x = x + r @ w2
logits = x @ wlm                                 # [B, S, V], V split over tp
loss = cross_entropy(logits, targets)

output loss, p
train loss with sgd(lr = 0.1)
