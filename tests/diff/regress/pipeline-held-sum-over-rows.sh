# diff: a pipeline's gradient of a param added to a value of rank 4 inside the repeat: summed over the microbatches, then over the rows (combine.c's rows rule), made again over merged rows only in its own task; on a stage whose middle microbatches are held once, the rule had rebuilt the sum over microbatches after the tasks from microbatches 0, 1, 2 and 7 alone (seed 2909630 of tests/diff's pipelines: the gradients of 8 microbatches summed as 4)
# diff-mesh: 1x2
# diff-ref: unpipelined
# diff-variant: --schedule 1f1b
# diff-variant: --microbatches 16 --schedule interleaved(2)
mesh ep = 1, pp = 2
input x : f32[64, 16, 4, 4]
input labels : i32[64, 16, 4]
block blk(h : f32[64, 16, 4, 4]) -> f32[64, 16, 4, 4] {
    param g : f32[4] = normal(0.1)
    return h + g
}
v = x
repeat 4 as layers over pp { v = blk(v) }
loss = cross_entropy(v, labels)
pipeline microbatches 8 schedule gpipe
train loss with sgd(lr = 0.05)
