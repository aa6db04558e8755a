# diff: training a vocabulary-parallel model (embedding and cross_entropy split along the vocabulary, their gradients too) took an id outside the vocabulary for a zero row instead of failing as the unsplit step does
# diff-mesh: 2x1
# diff-mesh: 2x2
# diff-ids: ids 1073741824
# diff-error: is outside the table's 64 rows
mesh tp, dp
input ids : i32[2, 2] shard(dp, _)
input t   : i32[2, 2] shard(dp, _)
param wte : f32[64, 4] shard(tp, _) = normal(0.02)
param wlm : f32[4, 64] shard(_, tp) = normal(0.02)
loss = cross_entropy(embedding(wte, ids) @ wlm, t)
output loss
train loss with sgd(lr = 0.1)
