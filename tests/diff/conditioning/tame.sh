# diff: well-conditioned (tests/diff/conditioning/run.py): a tanh layer
# whose reference 1 ulp of the inputs moves by a small part of the tolerance
# diff-mesh: 2x1
mesh dp, tp
let B = 64, D = 16, H = 8
input x : f32[B, D] shard(dp, _)
input target : f32[B, H] shard(dp, _)
param w : f32[D, H] shard(_, tp) = normal(0.25)
y = tanh(x @ w)
loss = mse(y, target)
output y
train loss with sgd(lr = 0.05)
