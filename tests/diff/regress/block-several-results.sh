# diff: blocks that return several values (-> (T1, T2), return a, b) bound
# by a, b = f(...): column-parallel projections returned together, and a
# pipelined repeat that carries two values from stage to stage
# diff-mesh: 2x2
# diff-mesh: 1x2
# diff-ref: unpipelined
mesh dp, pp
input x : f32[8, 16] shard(dp, _)
input t : f32[8, 16] shard(dp, _)
block qk(h : f32[8, 16]) -> (f32[8, 16], f32[8, 16]) {
    param wq : f32[16, 16] = normal(0.3)
    param wk : f32[16, 16] = normal(0.3)
    return h @ wq, tanh(h @ wk)
}
block layer(u : f32[8, 16], v : f32[8, 16]) -> (f32[8, 16], f32[8, 16]) {
    a, b = qk(u)
    return u + a * v, v + 0.5 * b
}
y = x * 0.5
repeat 2 as layers over pp {
    x, y = layer(x, y)
}
loss = mse(x + y, t)
output x, y, loss
pipeline microbatches 2 schedule 1f1b
train loss with adamw(lr = 0.01)
