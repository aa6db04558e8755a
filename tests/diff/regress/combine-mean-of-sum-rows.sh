# diff: a mean over dim 0 of a sum over dim 0 of a split value (x2 split over tp on its first dim): combine.c moved the all_reduce after the mean and merged the two reductions' rows into one, which is right for a sum of a sum, but the mean then divided by both dims: the loss came out 4x too small on 2x1 (seed 2702455, a wrong result); a mean keeps its own reduction now
# diff-mesh: 2x1
# diff-mesh: 4x1
# diff-variant: --recompute
# diff-inputs: batches
mesh tp, sp
let B = 8, D = 4
input x2 : f32[B, B, D] shard(tp, _, _)
param w1 : f32[D, D] = normal(0.5)
v1 = x2 @ w1
v5 = sum(v1, axis = -3)
loss = sum(mean(v5, axis = 0), axis = 0)
train loss with sgd(lr = 0.05, clip = 5.0)
