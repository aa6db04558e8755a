# let constants, and -D NAME=VALUE overriding one; a later let that depends
# on the overridden one (H = 4 * D) sees the new value.
# RUN: %shardc %s --mesh 2x2 --emit ir | FileCheck %s
# RUN: %shardc %s --mesh 2x2 -D D=32 --emit ir | FileCheck %s --check-prefix=D32
# RUN: %shardc %s --mesh 2x2 -D B=16 -D D=8 --emit ir | FileCheck %s --check-prefix=BOTH
# RUN: %shardc %s --mesh 2x2 -D H=20 --emit ir | FileCheck %s --check-prefix=H20
mesh dp, tp
let B = 8, D = 16, H = 4 * D
let K = (H - D) / 2 + 1
input x : f32[B, D] shard(dp, _)
param w : f32[D, H] shard(_, tp) = zeros
param v : f32[K] = zeros
y = x @ w
output y
# CHECK: %x = input {name = "x"} : f32[8, 16] shard(dp, _)
# CHECK-NEXT: %w = param {name = "w", init = zeros} : f32[16, 64] shard(_, tp)
# CHECK-NEXT: %v = param {name = "v", init = zeros} : f32[25]{{$}}
# CHECK-NEXT: %y = matmul %x, %w : f32[8, 64]
# D32: %x = input {name = "x"} : f32[8, 32] shard(dp, _)
# D32-NEXT: %w = param {name = "w", init = zeros} : f32[32, 128] shard(_, tp)
# D32-NEXT: %v = param {name = "v", init = zeros} : f32[49]{{$}}
# BOTH: %x = input {name = "x"} : f32[16, 8] shard(dp, _)
# BOTH-NEXT: %w = param {name = "w", init = zeros} : f32[8, 32] shard(_, tp)
# H20: %w = param {name = "w", init = zeros} : f32[16, 20] shard(_, tp)
# H20-NEXT: %v = param {name = "v", init = zeros} : f32[3]{{$}}
