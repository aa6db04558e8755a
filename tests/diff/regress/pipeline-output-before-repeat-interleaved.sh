# diff: an output made before the pipelined repeat, and one made after it from the first stage's param, follow the training steps on the interleaved schedule
# diff-mesh: 1x2
# diff-mesh: 1x4
# diff-ref: unpipelined
# diff-steps: 3
mesh dp, pp
input x : f32[8, 4]
input y : f32[8, 4]
param w0 : f32[4, 4] = normal(0.3)
block layer(h : f32[8, 4]) -> f32[8, 4] {
    param w : f32[4, 4] = normal(0.3)
    return tanh(h @ w)
}
a = relu(x @ w0)
h = a
repeat 8 as layers over pp { h = layer(h) }
loss = mse(h, y)
c = x @ w0 + y
output a, c, loss
train loss with sgd(lr = 0.5)
pipeline microbatches 4 schedule interleaved(2)
