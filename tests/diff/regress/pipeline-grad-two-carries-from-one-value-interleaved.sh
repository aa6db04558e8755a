# diff: as pipeline-grad-two-carries-from-one-value.sh, on the interleaved schedule: one stage of two chunks (mesh 1x1) and two stages of two chunks each
# diff-mesh: 2x1
# diff-mesh: 1x1
# diff-ref: unpipelined
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
pipeline microbatches 2 schedule interleaved(2)
