# diff: a pipelined training loss computed from per-step values only (an
# input and a param, none of the repeat's microbatches) and output by the
# program: the output was read where its param lives (stage 0), the loss
# the trainer reports was recomputed on the last stage and written as a
# second output, "train.loss", which the unpipelined run has not (seed
# 1800916, 3x1). Now the loss is one value on the output's stage.
# diff-mesh: 3x1
# diff-mesh: 2x1
# diff-ref: unpipelined
mesh pp, c
input x0 : f32[24, 12]
input x1 : f32[24, 4, 4]
param w1 : f32[12, 12] = uniform(-0.5, 0.5)
block blk(h : f32[24, 12]) -> f32[24, 12] {
    param w : f32[12, 12] = normal(0.3)
    return tanh(h @ w)
}
v = x0 @ w1
repeat 3 as layers over pp { v = v + blk(v) }
t, i = topk(x1, 1)
param g : f32[1] = normal(0.1)
loss = 0.5 * sum(mean(mean(t * g, axis = 0), axis = -1), axis = 0)
output v, g, loss
pipeline microbatches 6 schedule interleaved(1)
train loss with sgd(lr = 0.05, momentum = 0.9)
