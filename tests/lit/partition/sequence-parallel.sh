# Sequence parallel: x, and the output, split over tp on dim 0. One
# all_gather before (its gathered output: B x D) and one reduce_scatter
# after (its unreduced input: B x D), no all_reduce.
# RUN: %shardc %s --mesh 2 --report json | FileCheck %s --check-prefix=TP2
# RUN: %shardc %s --mesh 4 --report json | FileCheck %s --check-prefix=TP4
# TP2: "collectives": [{"kind": "all_gather", "axes": ["tp"], "dtype": "f32", "elements": 65536, "phase": "forward"}, {"kind": "reduce_scatter", "axes": ["tp"], "dtype": "f32", "elements": 65536, "phase": "forward"}]}]}
# TP4: "bytes_sent": 393216, "collectives": [{"kind": "all_gather", "axes": ["tp"], "dtype": "f32", "elements": 65536, "phase": "forward"}, {"kind": "reduce_scatter", "axes": ["tp"], "dtype": "f32", "elements": 65536, "phase": "forward"}]}]}
mesh tp
let B = 64, D = 1024, H = 4 * D
input  x  : f32[B, D] shard(tp, _)
param  w1 : f32[D, H] shard(_, tp) = normal(0.02)
param  w2 : f32[H, D] shard(tp, _) = normal(0.02)
out = gelu(x @ w1) @ w2 shard(tp, _)
output out
