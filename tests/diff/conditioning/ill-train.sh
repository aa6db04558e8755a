# diff: ill-conditioned through its params (tests/diff/conditioning/run.py):
# 5 layers of a bf16 matmul whose contraction is split over `a`, then an
# rmsnorm over 4 features; each rank's partial product is rounded to bf16
# before the all-reduce, and the rmsnorms carry that 1.3 tolerances to the
# outputs. 1 ulp of the inputs alone moves the reference less than a
# tolerance; 1 ulp of the starting params too moves it past one
# (gen.py seed 2946947, reduced)
# diff-mesh: 1x1x2
# diff-ref: unpipelined
# diff-flags: --keep-gathered
# diff-variant: --schedule interleaved(2)
mesh pp, ep, a
let B = 32, D = 4, H = 8
input x0 : bf16[B, D]
v1 = dropout(x0, 0.1)
block blk5(h : bf16[B, D]) -> bf16[B, D] {
    param w2 : bf16[D, D] shard((a, ep), _) = uniform(-0.850, 0.850)
    v6 = h @ w2
    param g3 : bf16[D] = uniform(0.5, 1.5)
    v7 = rmsnorm(v6, g3)
    return (v7) * 0.5
}
v8 = v1 * 0.5
repeat 5 as layers { v8 = blk5(v8) }
v9 = cast(v8, f32)
loss = mean(mean(v8, axis = -1), axis = -1)
output v9
train loss with sgd(lr = 0.01)
