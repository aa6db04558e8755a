# Gradient buckets (--bucket-mb, default 25 MiB): the collectives that
# synchronise gradients are grouped into one per bucket, issued after the
# bucket's last gradient; the bytes sent stay those of the closed forms,
# 2(d-1)/d * Psi * 4 for data parallel (Psi = 16512 params, d = 4), and the
# model states keep the ZeRO formulas. With 0.04 MiB (41943 bytes) the
# backward's w2 and b1 gradients (32768 + 512 bytes) share a bucket and
# w1's (32768) needs its own.
# RUN: %shardc %s --mesh 4 --report json | FileCheck %s --check-prefix=DP
# RUN: %shardc %s --mesh 4 --bucket-mb 0.04 --report json | FileCheck %s --check-prefix=SMALL
# RUN: sed 's/^train loss with adamw(lr = 0.001)$/& zero 2 over dp/' %s > %t.z2.sh
# RUN: %shardc %t.z2.sh --mesh 4 --report json | FileCheck %s --check-prefix=Z2
# RUN: %shardc %t.z2.sh --mesh 4 --emit sharded-ir | FileCheck %s --check-prefix=IR
# RUN: %expect 2 %shardc %s --bucket-mb -1 2>&1 | FileCheck %s --check-prefix=BAD
# RUN: %expect 2 %shardc %s --bucket-mb 2x 2>&1 | FileCheck %s --check-prefix=BAD2
mesh dp
let B = 256, D = 64, H = 128
input  x  : f32[B, D] shard(dp, _)
input  y  : f32[B, D] shard(dp, _)
param  w1 : f32[D, H] = normal(0.02)
param  b1 : f32[H]    = zeros
param  w2 : f32[H, D] = normal(0.02)
loss = mse(gelu(x @ w1 + b1) @ w2, y)
train loss with adamw(lr = 0.001)
# DP: "memory": {"params": 66048, "gradients": 66048, "optimizer_state": 132100,
# DP-SAME: "bytes_sent": 99078, "collectives": [{"kind": "all_reduce", "axes": ["dp"], "dtype": "f32", "elements": 1, "phase": "forward"}, {"kind": "all_reduce", "axes": ["dp"], "dtype": "f32", "elements": 16512, "phase": "backward"}]}]}
# SMALL: "bytes_sent": 99078, "collectives": [{"kind": "all_reduce", "axes": ["dp"], "dtype": "f32", "elements": 1, "phase": "forward"}, {"kind": "all_reduce", "axes": ["dp"], "dtype": "f32", "elements": 8320, "phase": "backward"}, {"kind": "all_reduce", "axes": ["dp"], "dtype": "f32", "elements": 8192, "phase": "backward"}]}]}
# Z2: "memory": {"params": 66048, "gradients": 16512, "optimizer_state": 33028,
# Z2-SAME: "bytes_sent": 99078, "collectives": [{"kind": "all_reduce", "axes": ["dp"], "dtype": "f32", "elements": 1, "phase": "forward"}, {"kind": "reduce_scatter", "axes": ["dp"], "dtype": "f32", "elements": 16512, "phase": "backward"}, {"kind": "all_gather", "axes": ["dp"], "dtype": "f32", "elements": 8192, "phase": "optimizer"}, {"kind": "all_gather", "axes": ["dp"], "dtype": "f32", "elements": 128, "phase": "optimizer"}, {"kind": "all_gather", "axes": ["dp"], "dtype": "f32", "elements": 8192, "phase": "optimizer"}]}]}
# Under ZeRO-2 each gradient puts its 4 row blocks in the bucket's 4 rows
# (w2 [128, 64]: 2048 columns; b1 [128]: 32; w1 [64, 128]: 2048), one
# reduce_scatter over dim 0 leaves each rank its block of each, and the
# optimizer reads them back with their own shapes.
# IR: {{^}}%[[Z:[0-9]+]] = const {value = 0.0} : f32[] auto() partial(dp) phase backward{{$}}
# IR-NEXT: {{^}}%[[B0:[0-9]+]] = expand %[[Z]] {shape = [4, 4128]} : f32[4, 4128] auto(_, _) partial(dp) phase backward{{$}}
# IR: {{^}}%[[B1:[0-9]+]] = insert %[[B0]], %{{[0-9]+}} {offset = 0} : f32[4, 4128] auto(_, _) partial(dp) phase backward{{$}}
# IR: {{^}}%[[B2:[0-9]+]] = insert %[[B1]], %{{[0-9]+}} {offset = 2048} : f32[4, 4128] auto(_, _) partial(dp) phase backward{{$}}
# IR: {{^}}%[[B3:[0-9]+]] = insert %[[B2]], %{{[0-9]+}} {offset = 2080} : f32[4, 4128] auto(_, _) partial(dp) phase backward{{$}}
# IR-NEXT: {{^}}%[[R:[0-9]+]] = reduce_scatter %[[B3]] {dim = 0, axes = [dp]} : f32[1, 4128] auto(dp, _) phase backward{{$}}
# IR-NEXT: {{^}}%[[G2:[0-9]+]] = extract %[[R]] {shape = [32, 64], offset = 0} : f32[32, 64] auto(dp, _) phase backward{{$}}
# IR-NEXT: {{^}}%[[GB:[0-9]+]] = extract %[[R]] {shape = [32], offset = 2048} : f32[32] auto(dp) phase backward{{$}}
# IR-NEXT: {{^}}%[[G1:[0-9]+]] = extract %[[R]] {shape = [16, 128], offset = 2080} : f32[16, 128] auto(dp, _) phase backward{{$}}
# IR-NOT: reduce_scatter
# IR: {{^}}update %w1 = %{{[0-9]+}} grad %[[G1]]{{$}}
# IR: {{^}}update %b1 = %{{[0-9]+}} grad %[[GB]]{{$}}
# IR: {{^}}update %w2 = %{{[0-9]+}} grad %[[G2]]{{$}}
# BAD: --bucket-mb -1: expected 0 (no buckets) to 1048576 MiB
# BAD2: --bucket-mb '2x': expected a size in MiB
