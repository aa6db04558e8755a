# ZeRO-3: the params themselves sharded over dp. Each is all_gathered before
# its use in the forward (Psi), again before a use in the backward, and its
# gradient reduce_scattered (Psi); the update stays sharded. The ZeRO paper's
# 3(d-1)/d Psi e counts a backward gather of every param; here only w2 is
# read by the backward (the gradients of w1 and b1 need x and the upstream
# gradient, not w1 or b1), so the backward gathers 8192 elements, not Psi:
# (d-1)/d * (2 Psi + 8192) * 4 bytes.
# Memory per rank, the ZeRO paper's model states with e = 4 bytes (f32) and
# K = 8 (AdamW's m and v in f32): params e*Psi/d, gradients e*Psi/d, optimizer
# state K*Psi/d, plus the 4-byte step count.
# RUN: %shardc %s --mesh 2 --bucket-mb 0 --report json | FileCheck %s --check-prefix=D2
# RUN: %shardc %s --mesh 4 --bucket-mb 0 --report json | FileCheck %s --check-prefix=D4
# (--bucket-mb 0: one collective per gradient; buckets.sh groups them.)
# --keep-gathered keeps activations only: a param ZeRO-3 gathered in the
# forward is gathered again in the backward (w2's 8192 elements), the same
# bytes as without the flag.
# RUN: %shardc %s --mesh 2 --bucket-mb 0 --keep-gathered --report json | FileCheck %s --check-prefix=D2
# D2: "peak_bytes": {{[0-9]+}}, "memory": {"params": 33024, "gradients": 33024, "optimizer_state": 66052, "activations": {{[0-9]+}}}
# D2-SAME: "bytes_sent": 82436, "collectives": [{"kind": "all_gather", "axes": ["dp"], "dtype": "f32", "elements": 8192, "phase": "forward"}, {"kind": "all_gather", "axes": ["dp"], "dtype": "f32", "elements": 128, "phase": "forward"}, {"kind": "all_gather", "axes": ["dp"], "dtype": "f32", "elements": 8192, "phase": "forward"}, {"kind": "all_reduce", "axes": ["dp"], "dtype": "f32", "elements": 1, "phase": "forward"}, {"kind": "all_gather", "axes": ["dp"], "dtype": "f32", "elements": 8192, "phase": "backward"}, {"kind": "reduce_scatter", "axes": ["dp"], "dtype": "f32", "elements": 8192, "phase": "backward"}, {"kind": "reduce_scatter", "axes": ["dp"], "dtype": "f32", "elements": 128, "phase": "backward"}, {"kind": "reduce_scatter", "axes": ["dp"], "dtype": "f32", "elements": 8192, "phase": "backward"}]}]}
# D4: "peak_bytes": {{[0-9]+}}, "memory": {"params": 16512, "gradients": 16512, "optimizer_state": 33028, "activations": {{[0-9]+}}}
# D4-SAME: "bytes_sent": 123654, "collectives": [{"kind": "all_gather", "axes": ["dp"], "dtype": "f32", "elements": 8192, "phase": "forward"}, {"kind": "all_gather", "axes": ["dp"], "dtype": "f32", "elements": 128, "phase": "forward"}, {"kind": "all_gather", "axes": ["dp"], "dtype": "f32", "elements": 8192, "phase": "forward"}, {"kind": "all_reduce", "axes": ["dp"], "dtype": "f32", "elements": 1, "phase": "forward"}, {"kind": "all_gather", "axes": ["dp"], "dtype": "f32", "elements": 8192, "phase": "backward"}, {"kind": "reduce_scatter", "axes": ["dp"], "dtype": "f32", "elements": 8192, "phase": "backward"}, {"kind": "reduce_scatter", "axes": ["dp"], "dtype": "f32", "elements": 128, "phase": "backward"}, {"kind": "reduce_scatter", "axes": ["dp"], "dtype": "f32", "elements": 8192, "phase": "backward"}]}]}
mesh dp
let B = 256, D = 64, H = 128
input  x  : f32[B, D] shard(dp, _)
input  y  : f32[B, D] shard(dp, _)
param  w1 : f32[D, H] = normal(0.02)
param  b1 : f32[H]    = zeros
param  w2 : f32[H, D] = normal(0.02)
loss = mse(gelu(x @ w1 + b1) @ w2, y)
train loss with adamw(lr = 0.001) zero 3 over dp
