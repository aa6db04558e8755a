# diff: in training, a value made before the pipelined repeat and read after it is made again on the last stage from its param's value, sent from the first stage each step (was refused: "param used on stages 0 and 1")
# diff-mesh: 2x1
# diff-mesh: 2x2
# diff-ref: unpipelined
mesh pp, tp
input x : f32[8, 4]
param w0 : f32[4, 4] = normal(0.5)
v = tanh(x @ w0)
block layer(h : f32[8, 4]) -> f32[8, 4] {
    param w : f32[4, 4] = normal(0.5)
    return tanh(h @ w)
}
h = v
repeat 2 as layers over pp { h = layer(h) }
loss = mean(sum(h * v, axis = 1), axis = 0)
output loss
train loss with sgd(lr = 0.1, momentum = 0.9)
pipeline microbatches 2 schedule 1f1b
