# The Megatron MLP with the batch split over dp: one all_reduce over tp of
# (B / dp) x D elements; dp needs no collective in the forward.
# RUN: %shardc %s --mesh 2x2 --report json | FileCheck %s --check-prefix=M22
# RUN: %shardc %s --mesh 2x4 --report json | FileCheck %s --check-prefix=M24
# M22: "mesh": {"axes": ["dp", "tp"], "sizes": [2, 2]}
# M22-SAME: "ranks": [0, 1, 2, 3]
# M22-SAME: "bytes_sent": 131072, "collectives": [{"kind": "all_reduce", "axes": ["tp"], "dtype": "f32", "elements": 32768, "phase": "forward"}]}]}
# M24: "bytes_sent": 196608, "collectives": [{"kind": "all_reduce", "axes": ["tp"], "dtype": "f32", "elements": 32768, "phase": "forward"}]}]}
mesh dp, tp
let B = 64, D = 1024, H = 4 * D
input  x  : f32[B, D] shard(dp, _)
param  w1 : f32[D, H] shard(_, tp) = normal(0.02)
param  b1 : f32[H]    shard(tp)    = zeros
param  w2 : f32[H, D] shard(tp, _) = normal(0.02)
out = gelu(x @ w1 + b1) @ w2
output out
