# diff: dropout in a pipeline on values that hold several blocks of the batch (the inputs split over dp and tp, the values after the tp matmul over dp only, then whole): a microbatch's rows are part of each block, their bits from the global rows (the position operand cut as the value is, or a dropout per block at its offset, joined); both were refused before
# diff-mesh: 2x2x2
# diff-mesh: 1x2x2
# diff-ref: unpipelined
# diff-steps: 2
mesh dp, tp, pp
input x : f32[8, 16] shard((dp, tp), _)
input y : f32[8, 16] shard((dp, tp), _)
block layer(h : f32[8, 16]) -> f32[8, 16] {
    param w : f32[16, 16] shard(_, tp) = normal(0.3)
    param v : f32[16, 16] = normal(0.3)
    g = dropout(tanh(h @ w), 0.3)
    u = tanh(g @ v) shard(_, _)
    return dropout(u, 0.2)
}
repeat 4 as layers over pp {
    x = layer(x)
}
loss = mse(x, y)
output loss, x
pipeline microbatches 2 schedule 1f1b
train loss with sgd(lr = 0.1)
