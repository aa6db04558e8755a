# Pure data parallel: the batch split over dp, weights replicated. No
# collective in the forward.
# RUN: %shardc %s --mesh 2 --report json | FileCheck %s
# RUN: %shardc %s --mesh 4 --report json | FileCheck %s
# CHECK: "bytes_sent": 0, "collectives": []}]}
mesh dp
let B = 64, D = 1024, H = 4 * D
input  x  : f32[B, D] shard(dp, _)
param  w1 : f32[D, H] = normal(0.02)
param  w2 : f32[H, D] = normal(0.02)
out = gelu(x @ w1) @ w2
output out
