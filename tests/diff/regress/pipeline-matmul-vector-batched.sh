# diff: a pipelined [B, S, K] @ [K] and [S] @ [B, S, K] (a 1-D operand against a batched one) keep the batch in dim 0 (was taken for a batch sum)
# diff-mesh: 1x2
# diff-mesh: 2x2
# diff-ref: unpipelined
mesh pp, tp
input x : f32[8, 3, 4]
block layer(h : f32[8, 3, 4]) -> f32[8, 3, 4] {
    param w : f32[4] = normal(0.5)
    param v : f32[3] = normal(0.5)
    return tanh(h * reshape(h @ w, [8, 3, 1]) + reshape(v @ h, [8, 1, 4]))
}
h = x
repeat 2 as layers over pp { h = layer(h) }
loss = mean(sum(sum(h * h, axis = 2), axis = 1), axis = 0)
output loss
train loss with sgd(lr = 0.1)
pipeline microbatches 2 schedule gpipe
