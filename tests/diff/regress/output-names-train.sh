# diff: outputs named after an input (reassigned) and a param in a training
# step; the param's output is its value after the update, the input's the
# forward's (it failed with "duplicate I/O name")
# diff-mesh: 2
# diff-mesh: 4
mesh dp
input x : f32[8, 4] shard(dp, _)
param w : f32[4, 4] shard(_, dp) = normal(0.5)
param b : f32[4] = zeros
x = tanh(x @ w + b)
loss = mean(mean(x * x, axis = 1), axis = 0)
output x, w, b, loss
train loss with sgd(lr = 0.5, momentum = 0.9)
