# ZeRO-1: the optimizer state sharded over dp. The gradients stay whole
# through the backward and are reduce_scattered at its end
# ((d-1)/d Psi e), the update runs on each rank's shard, and the new params
# are all_gathered ((d-1)/d Psi e): 2(d-1)/d * Psi * 4 bytes in all, plain
# data parallelism's bytes (it was 3(d-1)/d with an all_reduce in place of
# the reduce_scatter). Psi = 16512: 66048 bytes at d = 2 and 99072 at
# d = 4, plus the loss's all_reduce (4 bytes, 6 at d = 4).
# Memory per rank, the ZeRO paper's model states with e = 4 bytes (f32) and
# K = 8 (AdamW's m and v in f32): params e*Psi, gradients e*Psi (whole:
# the reduce_scatters read them at the end of the backward), optimizer
# state K*Psi/d, plus the 4-byte step count. ZeRO-2 (last RUN) keeps only
# each rank's shard, e*Psi/d, and sends the same bytes.
# RUN: %shardc %s --mesh 2 --bucket-mb 0 --report json | FileCheck %s --check-prefix=D2
# RUN: %shardc %s --mesh 4 --bucket-mb 0 --report json | FileCheck %s --check-prefix=D4
# (--bucket-mb 0: one collective per gradient; buckets.sh groups them.)
# The schedule: every reduce_scatter after the backward's last matmul, just
# before the optimizer, with and without buckets.
# RUN: %shardc %s --mesh 4 --bucket-mb 0 --arch none --emit schedule | FileCheck %s --check-prefix=S
# RUN: %shardc %s --mesh 4 --arch none --emit schedule | FileCheck %s --check-prefix=S
# RUN: sed 's/zero 1 over/zero 2 over/' %s > %t.z2.sh
# RUN: %shardc %t.z2.sh --mesh 4 --bucket-mb 0 --report json | FileCheck %s --check-prefix=Z2
# D2: "peak_bytes": {{[0-9]+}}, "memory": {"params": 66048, "gradients": 66048, "optimizer_state": 66052, "activations": {{[0-9]+}}}
# D2-SAME: "bytes_sent": 66052, "collectives": [{"kind": "all_reduce", "axes": ["dp"], "dtype": "f32", "elements": 1, "phase": "forward"}, {"kind": "reduce_scatter", "axes": ["dp"], "dtype": "f32", "elements": 8192, "phase": "backward"}, {"kind": "reduce_scatter", "axes": ["dp"], "dtype": "f32", "elements": 128, "phase": "backward"}, {"kind": "reduce_scatter", "axes": ["dp"], "dtype": "f32", "elements": 8192, "phase": "backward"}, {"kind": "all_gather", "axes": ["dp"], "dtype": "f32", "elements": 8192, "phase": "optimizer"}, {"kind": "all_gather", "axes": ["dp"], "dtype": "f32", "elements": 128, "phase": "optimizer"}, {"kind": "all_gather", "axes": ["dp"], "dtype": "f32", "elements": 8192, "phase": "optimizer"}]}]}
# D4: "peak_bytes": {{[0-9]+}}, "memory": {"params": 66048, "gradients": 66048, "optimizer_state": 33028, "activations": {{[0-9]+}}}
# D4-SAME: "bytes_sent": 99078, "collectives": [{"kind": "all_reduce", "axes": ["dp"], "dtype": "f32", "elements": 1, "phase": "forward"}, {"kind": "reduce_scatter", "axes": ["dp"], "dtype": "f32", "elements": 8192, "phase": "backward"}, {"kind": "reduce_scatter", "axes": ["dp"], "dtype": "f32", "elements": 128, "phase": "backward"}, {"kind": "reduce_scatter", "axes": ["dp"], "dtype": "f32", "elements": 8192, "phase": "backward"}, {"kind": "all_gather", "axes": ["dp"], "dtype": "f32", "elements": 8192, "phase": "optimizer"}, {"kind": "all_gather", "axes": ["dp"], "dtype": "f32", "elements": 128, "phase": "optimizer"}, {"kind": "all_gather", "axes": ["dp"], "dtype": "f32", "elements": 8192, "phase": "optimizer"}]}]}
# S: gelu_grad
# S-NOT: reduce_scatter
# S: matmul
# S-NOT: matmul
# S: reduce_scatter
# S-NOT: {{matmul|_grad}}
# S: adam_m
# Z2: "memory": {"params": 66048, "gradients": 16512, "optimizer_state": 33028,
# Z2-SAME: "bytes_sent": 99078,
mesh dp
let B = 256, D = 64, H = 128
input  x  : f32[B, D] shard(dp, _)
input  y  : f32[B, D] shard(dp, _)
param  w1 : f32[D, H] = normal(0.02)
param  b1 : f32[H]    = zeros
param  w2 : f32[H, D] = normal(0.02)
loss = mse(gelu(x @ w1 + b1) @ w2, y)
train loss with adamw(lr = 0.001) zero 1 over dp
