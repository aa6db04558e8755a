# diff: a pipelined [B, K] @ [K] (a 1-D right operand) keeps the batch in dim 0 of its [B] result (was an internal error, or taken for a batch sum and refused)
# diff-mesh: 1x2
# diff-mesh: 2x2
# diff-ref: unpipelined
mesh pp, tp
input x : f32[8, 4]
input t : f32[8]
block layer(h : f32[8, 4]) -> f32[8, 4] {
    param w : f32[4] = normal(0.5)
    return tanh(h * reshape(h @ w, [8, 1]))
}
h = x
repeat 2 as layers over pp { h = layer(h) }
param w7 : f32[4] = normal(0.5)
loss = mse(h @ w7, t)
output loss
train loss with sgd(lr = 0.1)
pipeline microbatches 2 schedule 1f1b
