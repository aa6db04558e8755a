# diff: a forward-only pipelined [B, K] @ [K] is made per microbatch (was taken for a batch sum: refused when read, an internal error when not)
# diff-mesh: 1x2
# diff-ref: unpipelined
mesh a, pp
input x : f32[8, 4]
block layer(h : f32[8, 4]) -> f32[8, 4] {
    param w : f32[4] = normal(1.0)
    return tanh(h + reshape(h @ w, [8, 1]))
}
h = x
repeat 2 as layers over pp { h = layer(h) }
output h
pipeline microbatches 2 schedule 1f1b
