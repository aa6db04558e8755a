# diff: a param read on the first stage and again after the pipelined repeat, on the last (LANGUAGE.md §12: a param used on several stages): each stage's gradient contribution summed on one, the param sent to the other at each step's start
# diff-mesh: 1x2
# diff-mesh: 2x2
# diff-ref: unpipelined
mesh dp, pp
input x : f32[8, 16] shard(dp, _)
input y : f32[8, 16] shard(dp, _)
param w0 : f32[16, 16] = normal(0.1)
block layer(h : f32[8, 16]) -> f32[8, 16] {
    param w : f32[16, 16] = normal(0.1)
    return relu(h @ w)
}
x = x @ w0
repeat 2 as layers over pp {
    x = layer(x)
}
x = x @ w0
loss = mse(x, y)
output loss
pipeline microbatches 2 schedule gpipe
train loss with adamw(lr = 0.01)
