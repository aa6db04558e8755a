# diff: an output made before the pipelined repeat, not on the loss's path, from a param whose gradient is made on another stage, is read on a stage that receives the param's value (was refused: "an output must be made on one stage")
# diff-mesh: 1x2
# diff-ref: unpipelined
mesh a, pp
input x : f32[8, 4]
input y : f32[8, 4]
param g : f32[4] = normal(0.5)
param w : f32[4, 4] = normal(0.5)
v = g + x
side = tanh(v) @ w
block blk(h : f32[8, 4]) -> f32[8, 4] {
    param b : f32[4] = normal(0.5)
    return b + h
}
repeat 4 as layers over pp { v = blk(v) }
loss = mse(v, y)
output side, loss
pipeline microbatches 2 schedule 1f1b
train loss with sgd(lr = 0.05, momentum = 0.9)
