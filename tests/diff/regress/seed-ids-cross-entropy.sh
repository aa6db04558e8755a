# diff: labels made from --seed are the same on every mesh when the logits
# are split over their classes (vocabulary-parallel cross_entropy): they
# came out all zeros, the partitioned loss no longer reading them directly,
# and ids through a reshape into a vocabulary-split embedding
# diff-inputs: seed
# diff-mesh: 2x2
# diff-mesh: 4x1
# diff-mesh: 1x4
mesh dp, tp
input ids : i32[4, 4] shard(dp, _)
input labels : i32[4, 4] shard(dp, _)
param emb : f32[16, 8] shard(tp, _) = normal(0.5)
param w : f32[8, 8] shard(_, tp) = normal(0.5)
x = embedding(emb, reshape(ids, [16]))
logits = reshape(x @ w, [4, 4, 8])
loss = cross_entropy(logits, labels)
output loss, labels
train loss with sgd(lr = 0.5)
