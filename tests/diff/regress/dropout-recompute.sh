# diff: dropout in a recompute block: the backward's copy of the block draws the forward's bits (the key is made outside the block, the tag and global shape are the op's)
# diff-mesh: 2x2
# diff-mesh: 1x4
# diff-steps: 2
mesh dp, tp
input x : f32[8, 16] shard(dp, _)
input y : f32[8, 16] shard(dp, _)
recompute block layer(h : f32[8, 16]) -> f32[8, 16] {
    param w : f32[16, 16] shard(_, tp) = normal(0.3)
    return tanh(dropout(h @ w, 0.3)) @ transpose(w)
}
z = layer(x)
loss = mse(z, y)
output loss, z
train loss with adamw(lr = 0.01)
