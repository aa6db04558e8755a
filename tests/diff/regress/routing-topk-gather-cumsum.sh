# diff: top-2 routing made of topk, one_hot, cumsum, gather and argmax
# (LANGUAGE.md §12), forward and backward: the gate's gradient reaches the
# router's weights through the top-k values (gathered from the logits),
# the positions in each expert's queue are a cumsum along the batch, split
# over dp (a partial sum all-reduced), and the experts are split over ep
# diff-mesh: 2x2
# diff-mesh: 1x4
# diff-mesh: 4x1
mesh dp, ep
input x : f32[8, 16] shard(dp, _)
input y : f32[8, 16] shard(dp, _)
param wg : f32[16, 4] = normal(0.5)
param we : f32[4, 16, 16] shard(ep, _, _) = normal(0.25)
logits = x @ wg
v, i = topk(logits, 2)
p = softmax(v, axis = -1)
gate = sum(one_hot(i, 4) * reshape(p, [8, 2, 1]), axis = 1)
pos = cumsum(one_hot(i[:, 0], 4), axis = 0)
top = gather(logits, reshape(argmax(logits, axis = 1), [8, 1]), axis = 1)
h = transpose(reshape(x, [1, 8, 16]) @ we, [1, 0, 2])
out = sum(h * reshape(gate, [8, 4, 1]), axis = 1)
loss = mse(out, y) + 0.01 * mean(pos * gate) + 0.1 * mean(top)
output loss, i, pos
train loss with sgd(lr = 0.1)
