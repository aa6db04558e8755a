# diff: partial sums that move only what their readers keep
# (passes/narrow.c, passes/combine.c), tied embeddings in data and tensor
# parallelism, with and without ZeRO: emb's gradient from the embedding,
# summed over dp and then sliced to the rank's rows over tp, is now the
# sum of the rank's rows; a slice over the sum's own axes is a
# reduce_scatter (the head's gradient under ZeRO, its columns over dp,
# behind a transpose), and a slice over (tp, dp) a reduce_scatter over dp
# of the rows over tp; then each table's two gradients, the head's
# transposed, are added before one sum (in the gradients' bucket); on
# 4x1, where tp is 1 and each table's gradient reaches its add through a
# constrain that changes nothing on a rank, the same
# diff-mesh: 2x2
# diff-mesh: 2x4
# diff-mesh: 4x1
# diff-variant: --zero 1
# diff-variant: --zero 3
# diff-ids: tokens 32
# diff-ids: targets 32
mesh dp, tp
let B = 4, S = 8, D = 16, V = 32
input tokens : i32[B, S] shard(dp, _)
input targets : i32[B, S] shard(dp, _)
param emb : f32[V, D] shard(tp, _) = normal(0.5)
param wte : f32[V, D] = normal(0.5)
param w1 : f32[D, D] shard(_, tp) = normal(0.25)
param w2 : f32[D, D] shard(tp, _) = normal(0.25)
x = embedding(emb, tokens) + embedding(wte, tokens)
x = x + tanh(x @ w1) @ w2
loss = cross_entropy(x @ transpose(emb), targets) + cross_entropy(x @ transpose(wte), targets)
output loss
train loss with adamw(lr = 0.01)
