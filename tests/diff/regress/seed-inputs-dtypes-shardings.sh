# diff: inputs made from --seed are the same full tensors on every mesh, for
# every dtype and every sharding (split, split over two axes, replicated);
# ids uniform over the rows of the table they index, labels over the
# classes of the logits (read through a gather, they came out all zeros)
# diff-inputs: seed
# diff-mesh: 2x2
# diff-mesh: 4x1
# diff-mesh: 1x4
mesh dp, tp
input a : f32[8, 4] shard(dp, tp)
input b : bf16[8, 4] shard((dp, tp), _)
input c : f16[8, 4] shard(_, (tp, dp))
input d : f32[8]
input ids : i32[8, 4] shard((tp, dp), _)
input lab : i32[8, 4] shard((dp, tp), _)
input z : i32[4, 4] shard(_, tp)
param t : f32[8, 2] shard(tp, _) = normal(1.0)
param u : f32[2, 4] shard(_, tp) = normal(1.0)
e = embedding(t, ids)
loss = cross_entropy(e @ u, lab)
output a, b, c, d, ids, lab, z, loss
