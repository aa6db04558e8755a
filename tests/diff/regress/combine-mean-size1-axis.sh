# diff: a mean (keepdims) of a partial sum whose result is split over an axis of size 1 on its size-1 dim: combine.c moved the all_reduce after the mean, and the collective then had to make a layout it does not (internal error from the verifier, seed 552882); the move is now made only where the collective makes the result's sharding
# diff-mesh: 1x2
# diff-ids: ids 6
mesh b, ep
let D = 6
input x1 : f16[D, 12]
block blk3(h : f16[D, 12]) -> f16[D, 12] {   # a comment
    param w2 : f16[12, 12] = uniform(-0.491, 0.491)
    v4 = h @ w2
    v5 = mean(v4, axis = -1, keepdims = true)
    param w3 : f16[1, 12] shard(b, ep) = uniform(-1.700, 1.700)
    return tanh(v5 @ w3)
}
v6 = x1
v6 = v6 + blk3(v6)
output x1
