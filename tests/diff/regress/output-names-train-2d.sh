# diff: a param's output after the update on a 2-D mesh, with the optimizer
# state sharded by ZeRO, and an input handed back unchanged under its name
# diff-mesh: 2x2
# diff-mesh: 2x1
mesh dp, tp
input x : f32[8, 4] shard(dp, _)
param w : f32[4, 8] shard(_, tp) = normal(0.5)
h = x @ w
loss = mean(mean(h * h, axis = 1), axis = 0)
output w, x, h
train loss with adamw(lr = 0.1) zero 3 over dp
