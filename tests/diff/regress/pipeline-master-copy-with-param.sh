# diff: the f32 master copy of a bf16 param whose gradient is a per-step value lives on its param's stage (was an internal error: stage 0 made it from a param it does not hold)
# diff-mesh: 2
# diff-ref: unpipelined
mesh pp
input x : bf16[8, 4]
block layer(h : bf16[8, 4]) -> bf16[8, 4] {
    param w : bf16[4, 4] = normal(0.5)
    return tanh(h @ w)
}
repeat 2 as layers over pp { x = layer(x) }
param g : bf16[4] = normal(0.5)
loss = sum(sum(cast(x - g, f32), axis = 0), axis = -1)
output loss
train loss with sgd(lr = 0.05)
pipeline microbatches 2 schedule gpipe
