# diff: attention's backward ops (attn_stats .. attn_dk) in a pipeline whose loss is a mean, so dy is the same in every row (per step): refused as "q, k and v must hold the batch" before the pipeline rule read such a dy as its products did
# diff-mesh: 1x2
# diff-ref: unpipelined
mesh pp, a
let B = 16, D = 12, H = 8
input x0 : f32[B, D, D]
recompute block blk3(h : f32[B,
        D, D]) -> f32[B, D, D] {   # a comment
    v5 = cumsum(h, axis = 1)
    param w1 : f32[D, D] = normal(0.289)   # a comment
    return tanh((v5 @ w1) * 0.0833)
}
v6 = x0
repeat 4 as layers over pp { v6 = v6 + blk3(v6) }
v7 = attention(v6, v6, v6, scale = 0.5)
loss = mean(mean(mean(v7, axis = 0), axis = -1), axis = 0)
train loss with sgd(lr = 0.01,
        momentum = 0.9, clip = 5.0)
