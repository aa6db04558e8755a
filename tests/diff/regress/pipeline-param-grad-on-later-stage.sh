# diff: params read before the pipelined repeat whose gradients are made on a later stage (blocks that pass the gradient through unchanged) live there, which makes their values again for the gradients, and are sent to the first stage each step (was refused: "param used on stages 0 and 1")
# diff-mesh: 2
# diff-ref: unpipelined
# diff-ids: ids 6
mesh pp
input ids : i32[8]
input y : f32[8, 4]
param table : f32[6, 4] = normal(0.5)
param w : f32[4, 4] = normal(0.5)
h = embedding(table, ids) @ w
block layer(h : f32[8, 4]) -> f32[8, 4] {
    param b : f32[4] = normal(0.5)
    return h + b
}
repeat 2 as layers over pp { h = layer(h) }
loss = mse(h, y)
output loss
train loss with adamw(lr = 0.1, eps = 1e-3)
pipeline microbatches 2 schedule gpipe
