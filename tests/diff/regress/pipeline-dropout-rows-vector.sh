# diff: dropout of a per-row vector after a pipelined repeat, on the last stage (reduced from gen.py seed 824086): the position operand of its batch rows is cut to each microbatch's own rows (pipeclass.c rule_dropout), read from 0; it was cut and also read at the microbatch's offset, past its end (an internal error at the plan's writing)
# diff-mesh: 1x1x2
# diff-ref: unpipelined
mesh dp, c, pp
let B = 16, D = 8, H = 4   # a comment
input x0 : f32[B, H]
input target : f32[B] shard(dp)
v1 = dropout(x0, 0.1)
block blk4(h : f32[B, H]) -> f32[B, H] {
    v5 = where(h >= (1.5 + 0.25), h, (1.5 + 0.25))
    param w2 : f32[H, H] = normal(0.5)
    return v5 @ w2
}
v6 = v1
repeat 6 as layers over pp { v6 = blk4(v6) }
v7 = mean(v6, axis = 1)
v8 = dropout(v7, 0.1)
param g3 : f32[] = zeros
v9 = max(v8, (g3 + 0.25))
loss = mse(v9, target)
pipeline microbatches 4 schedule gpipe   # a comment
train loss with sgd(lr = 0.05,
        clip = 5.0)
