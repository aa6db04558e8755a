# The whole program of LANGUAGE.md §1, lowered.
# RUN: %shardc %s --mesh 2x2 --emit ir | FileCheck %s
# RUN: %shardc %s --mesh 8x4 -D B=128 --emit ir | FileCheck %s --check-prefix=BIG
# mlp.sh: a two-layer MLP, data parallel over dp, tensor parallel over tp
mesh dp, tp                          # axis sizes come from --mesh 8x4

let B = 64, D = 1024, H = 4 * D      # integer constants; -D B=128 overrides

input  x  : f32[B, D]   shard(dp, _)
input  y  : f32[B, D]   shard(dp, _)
param  w1 : f32[D, H]   shard(_, tp)   = normal(0.02)
param  b1 : f32[H]      shard(tp)      = zeros
param  w2 : f32[H, D]   shard(tp, _)   = normal(0.02)

h    = gelu(x @ w1 + b1)
out  = h @ w2
loss = mse(out, y)

output out, loss
train loss with sgd(lr = 0.01)
# CHECK: {{^}}mesh dp = 2, tp = 2{{$}}
# CHECK-NEXT: {{^}}%x = input {name = "x"} : f32[64, 1024] shard(dp, _){{$}}
# CHECK-NEXT: {{^}}%y = input {name = "y"} : f32[64, 1024] shard(dp, _){{$}}
# CHECK-NEXT: {{^}}%w1 = param {name = "w1", init = normal(0.02)} : f32[1024, 4096] shard(_, tp){{$}}
# CHECK-NEXT: {{^}}%b1 = param {name = "b1", init = zeros} : f32[4096] shard(tp){{$}}
# CHECK-NEXT: {{^}}%w2 = param {name = "w2", init = normal(0.02)} : f32[4096, 1024] shard(tp, _){{$}}
# CHECK-NEXT: [[XW:%[0-9]+]] = matmul %x, %w1 : f32[64, 4096]{{$}}
# CHECK-NEXT: [[XB:%[0-9]+]] = add [[XW]], %b1 : f32[64, 4096]{{$}}
# CHECK-NEXT: {{^}}%h = gelu [[XB]] : f32[64, 4096]{{$}}
# CHECK-NEXT: {{^}}%out = matmul %h, %w2 : f32[64, 1024]{{$}}
# CHECK-NEXT: {{^}}%loss = mse %out, %y : f32[]{{$}}
# CHECK-NEXT: {{^}}output "out" = %out{{$}}
# CHECK-NEXT: {{^}}output "loss" = %loss{{$}}
# CHECK-NEXT: {{^}}train %loss with sgd(lr = 0.01, momentum = 0.0, wd = 0.0){{$}}
# CHECK-NOT: {{.}}
# BIG: {{^}}mesh dp = 8, tp = 4{{$}}
# BIG-NEXT: {{^}}%x = input {name = "x"} : f32[128, 1024] shard(dp, _){{$}}
