# diff: zero 1 with a pipelined repeat: a stage's program updates its layers' params before the backward of the ops outside the repeat, and the zero axis's reduce_scatters were all moved before the first update, so w1's came before its gradient existed (shardc exit 3: an operand not defined by an earlier op; seed 100791)
# diff-mesh: 1x2
# diff-mesh: 2x2
# diff-ref: unpipelined
mesh pp, c
let B = 8, D = 16
input x2 : f32[B, D, B] shard(_, c, _)
param w1 : f32[B, D] = normal(0.354)
v3 = sigmoid(x2 @ w1)
block blk4(h : f32[B, D, D]) -> f32[B, D, D] {
    param w3 : f32[D, B] = normal(0.25)
    param g4 : f32[B] = normal(0.1)
    param w5 : f32[B, D] = normal(0.354)
    return (h @ w3) * g4 @ w5
}
v8 = v3
repeat 2 as layers over pp { v8 = blk4(v8) }
loss = 0.5 * mean(mean(mean(v8, axis = 1), axis = -1), axis = 0)
train loss with sgd(lr = 0.01) zero 1 over c
