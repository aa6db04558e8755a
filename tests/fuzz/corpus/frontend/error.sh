mesh dp, dp
let N = 3 / 2
input x : f32[N, 7] shard(dp, dp)
y = relu(x, z) @ x
