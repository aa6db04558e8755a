# diff: a sum narrowed as an operand stays where it was (passes/narrow.c),
# from a generated program (seed 2960153): q = tanh(v3) @ w3 is summed
# over sp, then sliced along its rows over b where the attention reads it
# (its mask split over b), after k and v; the sum of the rank's rows
# (narrowed with its tanh and matmul) is issued where the whole sum was,
# before k's and v's products, not at the slice
# diff-mesh: 2x2x1
# diff-inputs: batches
# diff-ids: labels 4
mesh b, sp, c
let B = 4, D = 8   # a comment
input x0 : f32[B, D]
input x1 : f32[B, D] shard(sp, b)
input labels : i32[B] shard(sp)
v1 = x1[:, -4:]
param g1 : f32[B] shard(sp) = ones
param g2 : f32[B] = normal(0.1)
v2 = layernorm(v1, g1, g2, eps = 1e-3)
v3 = transpose(v2, [1, 0])
param w3 : f32[B, B] = normal(0.5)
param w4 : f32[B, B] = uniform(-0.850, 0.850)
param w5 : f32[B, B] shard(b, sp) = normal(0.5)
param w6 : f32[B, B] shard(b, _) = normal(0.5)
v4 = attention(tanh(v3) @ w3, tanh(v3) @ w4, tanh(v3) @ w5, causal = false, scale = 0.5, mask = w6)
param w7 : f32[B] = uniform(-0.850, 0.850)
v5 = w7 @ v2
loss = cross_entropy(v2, labels)
output v3, loss
train loss with sgd(lr = 0.05)
