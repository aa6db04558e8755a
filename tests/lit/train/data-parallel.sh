# Pure data parallel training: the batch split over dp, the params
# replicated. The forward needs no collective but the loss's all_reduce; the
# backward all_reduces each gradient once: 2(d-1)/d * Psi * 4 bytes per rank
# (Psi = 64*128 + 128 + 128*64 = 16512 params), plus 2(d-1)/d * 4 for the loss.
# RUN: %shardc %s --mesh 2 --report json | FileCheck %s --check-prefix=D2
# RUN: %shardc %s --mesh 4 --report json | FileCheck %s --check-prefix=D4
# D2: "bytes_sent": 66052, "collectives": [{"kind": "all_reduce", "axes": ["dp"], "dtype": "f32", "elements": 1, "phase": "forward"}, {"kind": "all_reduce", "axes": ["dp"], "dtype": "f32", "elements": 8192, "phase": "backward"}, {"kind": "all_reduce", "axes": ["dp"], "dtype": "f32", "elements": 128, "phase": "backward"}, {"kind": "all_reduce", "axes": ["dp"], "dtype": "f32", "elements": 8192, "phase": "backward"}]}]}
# D4: "bytes_sent": 99078, "collectives": [{"kind": "all_reduce", "axes": ["dp"], "dtype": "f32", "elements": 1, "phase": "forward"}, {"kind": "all_reduce", "axes": ["dp"], "dtype": "f32", "elements": 8192, "phase": "backward"}, {"kind": "all_reduce", "axes": ["dp"], "dtype": "f32", "elements": 128, "phase": "backward"}, {"kind": "all_reduce", "axes": ["dp"], "dtype": "f32", "elements": 8192, "phase": "backward"}]}]}
mesh dp
let B = 256, D = 64, H = 128
input  x  : f32[B, D] shard(dp, _)
input  y  : f32[B, D] shard(dp, _)
param  w1 : f32[D, H] = normal(0.02)
param  b1 : f32[H]    = zeros
param  w2 : f32[H, D] = normal(0.02)
loss = mse(gelu(x @ w1 + b1) @ w2, y)
train loss with adamw(lr = 0.001)
