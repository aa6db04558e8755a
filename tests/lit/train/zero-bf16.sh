# Mixed precision under ZeRO: bf16 params (e = 2 bytes) trained through f32
# master weights, with AdamW's m and v in f32, so K = 12 bytes of optimizer
# state per param (a 4-byte master, m and v: the ZeRO paper's mixed-precision
# Adam). Psi = 64*128 + 128 + 128*64 = 16512 params, d = 4. Per rank, the
# ZeRO paper's model states: optimizer state K Psi = 198144 (data parallel)
# or K Psi / d = 49536 (ZeRO 1, 2 and 3), plus the 4-byte step count; params
# e Psi = 33024 (e Psi / d = 8256 with ZeRO 3); gradients e Psi (e Psi / d
# with ZeRO 2 and 3; ZeRO 1 keeps them whole to the end of the backward):
# the gradients stay bf16 and are synchronised in bf16, 2(d-1)/d Psi e =
# 49536 bytes for data parallel, ZeRO 1 and ZeRO 2 (ZeRO 1 and 2 as a
# reduce_scatter of the gradients and an all_gather of the bf16 params
# after the update), each plus the loss's all_reduce (6 bytes). Each f32 master is sharded like
# the other optimizer states, and the gradient cast to f32 once.
# RUN: %shardc %s --mesh 4 --bucket-mb 0 --report json | FileCheck %s --check-prefix=Z0
# RUN: sed 's/^train .*/& zero 1 over dp/' %s > %t.sh
# RUN: %shardc %t.sh --mesh 4 --bucket-mb 0 --report json | FileCheck %s --check-prefix=Z1
# RUN: sed 's/^train .*/& zero 2 over dp/' %s > %t.sh
# RUN: %shardc %t.sh --mesh 4 --bucket-mb 0 --report json | FileCheck %s --check-prefix=Z2
# RUN: sed 's/^train .*/& zero 3 over dp/' %s > %t.sh
# RUN: %shardc %t.sh --mesh 4 --bucket-mb 0 --report json | FileCheck %s --check-prefix=Z3
# RUN: %shardc %t.sh --mesh 4 --report | FileCheck %s --check-prefix=TEXT
# Z0: "memory": {"params": 33024, "gradients": 33024, "optimizer_state": 198148, "activations": {{[0-9]+}}}
# Z0-SAME: "bytes_sent": 49542,
# Z0-NOT: all_gather
# Z1: "memory": {"params": 33024, "gradients": 33024, "optimizer_state": 49540, "activations": {{[0-9]+}}}
# Z1-SAME: "bytes_sent": 49542,
# Z1-SAME: {"kind": "reduce_scatter", "axes": ["dp"], "dtype": "bf16", "elements": 8192, "phase": "backward"}
# Z1-SAME: {"kind": "all_gather", "axes": ["dp"], "dtype": "bf16", "elements": 8192, "phase": "optimizer"}
# Z2: "memory": {"params": 33024, "gradients": 8256, "optimizer_state": 49540, "activations": {{[0-9]+}}}
# Z2-SAME: "bytes_sent": 49542,
# Z2-SAME: {"kind": "reduce_scatter", "axes": ["dp"], "dtype": "bf16", "elements": 8192, "phase": "backward"}
# Z3: "memory": {"params": 8256, "gradients": 8256, "optimizer_state": 49540, "activations": {{[0-9]+}}}
# TEXT: optimizer state{{ +}}49540
mesh dp
let B = 256, D = 64, H = 128
input  x  : bf16[B, D] shard(dp, _)
input  y  : f32[B, D]  shard(dp, _)
param  w1 : bf16[D, H] = normal(0.02)
param  b1 : bf16[H]    = zeros
param  w2 : bf16[H, D] = normal(0.02)
loss = mse(cast(gelu(x @ w1 + b1) @ w2, f32), y)
train loss with adamw(lr = 0.001)
