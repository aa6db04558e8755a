# ZeRO-1: the optimizer state sharded over dp. Gradients are all_reduced
# whole (2(d-1)/d Psi e), the update runs on each rank's shard, and the new
# params are all_gathered ((d-1)/d Psi e): 3(d-1)/d * Psi * 4 bytes in all.
# Memory per rank, the ZeRO paper's model states with e = 4 bytes (f32) and
# K = 8 (AdamW's m and v in f32): params e*Psi, gradients e*Psi, optimizer state
# K*Psi/d, plus the 4-byte step count.
# RUN: %shardc %s --mesh 2 --bucket-mb 0 --report json | FileCheck %s --check-prefix=D2
# RUN: %shardc %s --mesh 4 --bucket-mb 0 --report json | FileCheck %s --check-prefix=D4
# (--bucket-mb 0: one collective per gradient; buckets.sh groups them.)
# D2: "peak_bytes": {{[0-9]+}}, "memory": {"params": 66048, "gradients": 66048, "optimizer_state": 66052, "activations": {{[0-9]+}}}
# D2-SAME: "bytes_sent": 99076, "collectives": [{"kind": "all_reduce", "axes": ["dp"], "dtype": "f32", "elements": 1, "phase": "forward"}, {"kind": "all_reduce", "axes": ["dp"], "dtype": "f32", "elements": 8192, "phase": "backward"}, {"kind": "all_reduce", "axes": ["dp"], "dtype": "f32", "elements": 128, "phase": "backward"}, {"kind": "all_reduce", "axes": ["dp"], "dtype": "f32", "elements": 8192, "phase": "backward"}, {"kind": "all_gather", "axes": ["dp"], "dtype": "f32", "elements": 8192, "phase": "optimizer"}, {"kind": "all_gather", "axes": ["dp"], "dtype": "f32", "elements": 128, "phase": "optimizer"}, {"kind": "all_gather", "axes": ["dp"], "dtype": "f32", "elements": 8192, "phase": "optimizer"}]}]}
# D4: "peak_bytes": {{[0-9]+}}, "memory": {"params": 66048, "gradients": 66048, "optimizer_state": 33028, "activations": {{[0-9]+}}}
# D4-SAME: "bytes_sent": 148614, "collectives": [{"kind": "all_reduce", "axes": ["dp"], "dtype": "f32", "elements": 1, "phase": "forward"}, {"kind": "all_reduce", "axes": ["dp"], "dtype": "f32", "elements": 8192, "phase": "backward"}, {"kind": "all_reduce", "axes": ["dp"], "dtype": "f32", "elements": 128, "phase": "backward"}, {"kind": "all_reduce", "axes": ["dp"], "dtype": "f32", "elements": 8192, "phase": "backward"}, {"kind": "all_gather", "axes": ["dp"], "dtype": "f32", "elements": 8192, "phase": "optimizer"}, {"kind": "all_gather", "axes": ["dp"], "dtype": "f32", "elements": 128, "phase": "optimizer"}, {"kind": "all_gather", "axes": ["dp"], "dtype": "f32", "elements": 8192, "phase": "optimizer"}]}]}
mesh dp
let B = 256, D = 64, H = 128
input  x  : f32[B, D] shard(dp, _)
input  y  : f32[B, D] shard(dp, _)
param  w1 : f32[D, H] = normal(0.02)
param  b1 : f32[H]    = zeros
param  w2 : f32[H, D] = normal(0.02)
loss = mse(gelu(x @ w1 + b1) @ w2, y)
train loss with adamw(lr = 0.001) zero 1 over dp
