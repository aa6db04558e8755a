# layernorm and rmsnorm over the last dimension, with their default eps
# (1e-5 and 1e-6) and an explicit one.
# RUN: %shardc %s --mesh 2x2 --emit ir | FileCheck %s
mesh dp, tp
input x : f32[2, 4, 8] shard(dp, _, _)
param g : f32[8] = ones
param b : f32[8] = zeros
# CHECK: {{^}}%n1 = layernorm %x, %g, %b {eps = 1e-05} : f32[2, 4, 8]{{$}}
# CHECK-NEXT: {{^}}%n2 = layernorm %x, %g, %b {eps = 1e-06} : f32[2, 4, 8]{{$}}
# CHECK-NEXT: {{^}}%n3 = rmsnorm %x, %g {eps = 1e-06} : f32[2, 4, 8]{{$}}
# CHECK-NEXT: {{^}}%n4 = rmsnorm %x, %g {eps = 0.001} : f32[2, 4, 8]{{$}}
n1 = layernorm(x, g, b)
n2 = layernorm(x, g, b, eps = 1e-6)
n3 = rmsnorm(x, g)
n4 = rmsnorm(x, g, eps = 0.001)
output n1
