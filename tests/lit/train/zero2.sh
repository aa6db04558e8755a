# ZeRO-2: optimizer state and gradients sharded over dp. Gradients are
# reduce_scattered ((d-1)/d Psi e), the new params all_gathered ((d-1)/d Psi
# e): 2(d-1)/d * Psi * 4 bytes, the same as data parallel's all_reduce.
# Memory per rank, the ZeRO paper's model states with e = 4 bytes (f32) and
# K = 8 (AdamW's m and v in f32): params e*Psi, gradients e*Psi/d, optimizer
# state K*Psi/d, plus the 4-byte step count.
# RUN: %shardc %s --mesh 2 --bucket-mb 0 --report json | FileCheck %s --check-prefix=D2
# RUN: %shardc %s --mesh 4 --bucket-mb 0 --report json | FileCheck %s --check-prefix=D4
# (--bucket-mb 0: one collective per gradient; buckets.sh groups them.)
# D2: "peak_bytes": {{[0-9]+}}, "memory": {"params": 66048, "gradients": 33024, "optimizer_state": 66052, "activations": {{[0-9]+}}}
# D2-SAME: "bytes_sent": 66052, "collectives": [{"kind": "all_reduce", "axes": ["dp"], "dtype": "f32", "elements": 1, "phase": "forward"}, {"kind": "reduce_scatter", "axes": ["dp"], "dtype": "f32", "elements": 8192, "phase": "backward"}, {"kind": "reduce_scatter", "axes": ["dp"], "dtype": "f32", "elements": 128, "phase": "backward"}, {"kind": "reduce_scatter", "axes": ["dp"], "dtype": "f32", "elements": 8192, "phase": "backward"}, {"kind": "all_gather", "axes": ["dp"], "dtype": "f32", "elements": 8192, "phase": "optimizer"}, {"kind": "all_gather", "axes": ["dp"], "dtype": "f32", "elements": 128, "phase": "optimizer"}, {"kind": "all_gather", "axes": ["dp"], "dtype": "f32", "elements": 8192, "phase": "optimizer"}]}]}
# D4: "peak_bytes": {{[0-9]+}}, "memory": {"params": 66048, "gradients": 16512, "optimizer_state": 33028, "activations": {{[0-9]+}}}
# D4-SAME: "bytes_sent": 99078, "collectives": [{"kind": "all_reduce", "axes": ["dp"], "dtype": "f32", "elements": 1, "phase": "forward"}, {"kind": "reduce_scatter", "axes": ["dp"], "dtype": "f32", "elements": 8192, "phase": "backward"}, {"kind": "reduce_scatter", "axes": ["dp"], "dtype": "f32", "elements": 128, "phase": "backward"}, {"kind": "reduce_scatter", "axes": ["dp"], "dtype": "f32", "elements": 8192, "phase": "backward"}, {"kind": "all_gather", "axes": ["dp"], "dtype": "f32", "elements": 8192, "phase": "optimizer"}, {"kind": "all_gather", "axes": ["dp"], "dtype": "f32", "elements": 128, "phase": "optimizer"}, {"kind": "all_gather", "axes": ["dp"], "dtype": "f32", "elements": 8192, "phase": "optimizer"}]}]}
mesh dp
let B = 256, D = 64, H = 128
input  x  : f32[B, D] shard(dp, _)
input  y  : f32[B, D] shard(dp, _)
param  w1 : f32[D, H] = normal(0.02)
param  b1 : f32[H]    = zeros
param  w2 : f32[H, D] = normal(0.02)
loss = mse(gelu(x @ w1 + b1) @ w2, y)
train loss with adamw(lr = 0.001) zero 2 over dp
