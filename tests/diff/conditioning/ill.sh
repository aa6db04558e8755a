# diff: ill-conditioned (tests/diff/conditioning/run.py): 8 layers of
# min(h, rmsnorm(h) + 0.25) choose between their two operands at every
# element, and 1 ulp of the inputs flips a choice near a tie, so the
# reference itself moves past the tolerance (gen.py seed 2738579, reduced)
# diff-mesh: 1x1x2
# diff-ref: unpipelined
mesh pp, ep, tp
let B = 128, D = 16, H = 4
input x0 : f32[B, D] shard(_, tp)
input target : f32[B, H]
param w2 : f32[D, H] = normal(0.25)
v3 = x0 @ w2
block blk4(h : f32[B, H]) -> f32[B, H] {
    param g3 : f32[H] = ones
    v5 = rmsnorm(h, g3)
    v6 = min(h, v5 + 0.25)
    return v6
}
v7 = v3 * 0.5
repeat 8 as layers { v7 = blk4(v7) }
loss = mse(v7, target)
train loss with sgd(lr = 0.05)
