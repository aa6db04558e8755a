# diff: each rank computing only the rows it keeps (passes/narrow.c),
# trained, from a generated program (seed 2940160): v2's layernorm is
# whole on every rank, then sliced along the batch for v3 (its matmul and
# the norm made on the rank's rows, where each rank had made all of them)
# and along the sequence for v4 (the matmul on the rank's rows of the
# norm), and in the backward the slices of what those read
# diff-mesh: 3x1
# diff-mesh: 2x1
# diff-variant: --bucket-mb 0.0002
# diff-resume: 1x1 mesh
mesh c, b
let B = 12, D = 6
input x0 : f32[B, B, B] shard(c, _, _)
input x1 : f32[B, B, D]
v1 = where(x0 >= -0.3, x0, (0.1 * x0 - 0.27))
param g1 : f32[D] = normal(0.1)
v2 = min(x1, (g1 + 0.25))
param g2 : f32[D] shard((c, b)) = uniform(0.5, 1.5)
param g3 : f32[D] shard(c) = ones
param w4 : f32[D, D] = normal(0.408)
v3 = v2 + layernorm(v2, g2, g3, eps = 1e-2) @ w4 shard(c, _, _)
param g5 : f32[D] shard(_) = uniform(0.5, 1.5)
param g6 : f32[D] = normal(0.1)
param w7 : f32[D, D] = uniform(-0.694, 0.694)
v4 = v2 + layernorm(v2, g5, g6, eps = 1e-2) @ w7 shard(_, c, _)
v5 = reshape(v4, [B, 72]) shard(c, b)
loss = mean(mean(mean(v4, axis = 0), axis = 0), axis = 0)
output v5, g5, loss
train loss with adamw(lr = 0.01, eps = 1e-3, clip = 5.0) zero 1 over c
