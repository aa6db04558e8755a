# diff: in training, both carries of a pipelined repeat start from one value before it (one of them through an op), and the loss reads the repeat's result through softmax: the gradient of that op reads a gradient of the last chunk, and the sum of the value's gradients one of the first; they run in the first chunk, on 1f1b and on the interleaved schedule, with one stage too (was refused: "it reads a value of pipeline chunk 0 from chunk 1 (backward to backward)")
# diff-mesh: 2x1
# diff-mesh: 2x2
# diff-mesh: 1x1
# diff-ref: unpipelined
# diff-variant: --schedule interleaved(2)
mesh pp, tp
input x : f32[8, 4]
param w0 : f32[4, 4] = normal(0.5)
v = x @ w0
u = v * 2.0
block layer(h : f32[8, 4], g : f32[8, 4]) -> (f32[8, 4], f32[8, 4]) {
    param w : f32[4, 4] shard(_, tp) = normal(0.3)
    a = tanh(g @ w)
    return a, tanh(g * 0.5 + a * 0.5)
}
h = u
g = v
repeat 4 as layers over pp {
    a, g = layer(h, g)
    h = h + a
}
loss = mean(mean(softmax(h), axis = 1), axis = 0)
output loss
train loss with sgd(lr = 0.1, momentum = 0.9)
pipeline microbatches 2 schedule 1f1b
