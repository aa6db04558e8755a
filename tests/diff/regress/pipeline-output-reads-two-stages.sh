# diff: an output made from params of two stages (one before the pipelined repeat, one after) is read on one stage, which receives the other's value each step (was refused: "an output must be made on one stage")
# diff-mesh: 2x2
# diff-ref: unpipelined
mesh dp, pp
input x : f32[8, 4] shard(dp, _)
param w0 : f32[4, 4] = normal(0.5)
param w9 : f32[4, 4] = normal(0.5)
block layer(h : f32[8, 4]) -> f32[8, 4] {
    param w : f32[4, 4] = normal(0.5)
    return relu(h @ w)
}
h = x @ w0
repeat 2 as layers over pp { h = layer(h) }
h = h @ w9
loss = mean(sum(h * h, axis = 1), axis = 0)
z = x @ w0 @ w9
output z, loss
pipeline microbatches 2 schedule gpipe
train loss with adamw(lr = 0.01)
