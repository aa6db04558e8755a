# Megatron MLP (w1 split over tp on its output dim, w2 on its input dim):
# the forward has exactly one collective, an all_reduce over tp of
# (local batch x D) elements, 2(n-1)/n x elements x 4 bytes sent per rank.
# RUN: %shardc %s --mesh 2 --report json | FileCheck %s --check-prefix=TP2
# RUN: %shardc %s --mesh 4 --report json | FileCheck %s --check-prefix=TP4
# TP2: "bytes_sent": 262144, "collectives": [{"kind": "all_reduce", "axes": ["tp"], "dtype": "f32", "elements": 65536, "phase": "forward"}]}]}
# TP4: "bytes_sent": 393216, "collectives": [{"kind": "all_reduce", "axes": ["tp"], "dtype": "f32", "elements": 65536, "phase": "forward"}]}]}
mesh tp
let B = 64, D = 1024, H = 4 * D
input  x  : f32[B, D]
param  w1 : f32[D, H] shard(_, tp) = normal(0.02)
param  w2 : f32[H, D] shard(tp, _) = normal(0.02)
out = gelu(x @ w1) @ w2
output out
