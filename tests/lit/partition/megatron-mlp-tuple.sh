# Three axes, the batch split over the tuple (pp, dp): the all_reduce over
# tp is of B / 4 x D elements.
# RUN: %shardc %s --mesh 2x2x2 --report json | FileCheck %s
# CHECK: "bytes_sent": 65536, "collectives": [{"kind": "all_reduce", "axes": ["tp"], "dtype": "f32", "elements": 16384, "phase": "forward"}]}]}
mesh pp, dp, tp
let B = 64, D = 1024, H = 4 * D
input  x  : f32[B, D] shard((pp, dp), _)
param  w1 : f32[D, H] shard(_, tp) = normal(0.02)
param  w2 : f32[H, D] shard(tp, _) = normal(0.02)
out = gelu(x @ w1) @ w2
output out
