# diff: a label outside the classes of logits split along them picked a zero logit on every rank instead of failing as the unsplit cross_entropy does
# diff-mesh: 2
# diff-mesh: 4
# diff-ids: t 1073741824
# diff-error: is outside the 64 classes (0..63)
mesh tp
input x : f32[2, 64] shard(_, tp)
input t : i32[2]
loss = cross_entropy(x, t)
output loss
