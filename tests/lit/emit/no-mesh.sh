# A model with no mesh: no mesh line, no shardings; the unsharded program.
# RUN: %shardc %s --emit ir | FileCheck %s
let B = 8, D = 16
input x : f32[B, D]
param w : f32[D, D] = ones
y = x @ w
output y
# CHECK-NOT: mesh
# CHECK: {{^}}%x = input {name = "x"} : f32[8, 16]{{$}}
# CHECK-NEXT: {{^}}%w = param {name = "w", init = ones} : f32[16, 16]{{$}}
# CHECK-NEXT: {{^}}%y = matmul %x, %w : f32[8, 16]{{$}}
# CHECK-NEXT: {{^}}output "y" = %y{{$}}
