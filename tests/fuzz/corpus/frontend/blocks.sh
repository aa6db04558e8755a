# blocks, repeat, reductions, layout
mesh dp = 2, tp = 2
let B = 4, S = 8, D = 16
input x : f32[B, S, D] shard(dp, _, _)
block mlp(x : f32[B, S, D]) -> f32[B, S, D] {
    param g : f32[D] = ones
    param w : f32[D, D] shard(_, tp) = uniform(-0.1, 0.1)
    return rmsnorm(x, g, eps = 1e-6) @ w
}
repeat 2 as layers {
    x = x + mlp(x) shard(dp, _, _)
}
s = softmax(x, axis = -1)
m = mean(sum(s, axis = 1, keepdims = true), axis = 2)
t = transpose(reshape(x, [B, S * D]), [1, 0])
c = cast(max(t, 0.5), bf16)
output m, c
