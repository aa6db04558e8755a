# `repeat ... over pp` with `pipeline microbatches M schedule S`: a
# `pipeline over` line after the mesh, and every op made by repetition N of
# the pipelined repeat (its params and consts too) marked `rep N`; ops before
# and after it carry no marker.
# RUN: %shardc %s --mesh 2x2 --emit ir | FileCheck %s
# RUN: %shardc %s --mesh 4x1 --emit ir | FileCheck %s --check-prefix=PP4
mesh pp, dp
let B = 8, D = 16
input x : f32[B, D] shard(dp, _)
param w0 : f32[D, D] = zeros
h = x @ w0
block lin(x : f32[B, D]) -> f32[B, D] {
    param w : f32[D, D] = zeros
    return x @ w
}
repeat 4 as layers over pp {
    h = h + lin(h) * 0.5
}
y = relu(h)
output y
pipeline microbatches 4 schedule 1f1b
# CHECK: {{^}}mesh pp = 2, dp = 2{{$}}
# CHECK-NEXT: {{^}}pipeline over pp repeats 4 microbatches 4 schedule 1f1b{{$}}
# CHECK-NEXT: {{^}}%x = input {name = "x"} : f32[8, 16] shard(dp, _){{$}}
# CHECK-NEXT: {{^}}%w0 = param {name = "w0", init = zeros} : f32[16, 16]{{$}}
# CHECK-NEXT: {{^}}%h = matmul %x, %w0 : f32[8, 16]{{$}}
# CHECK-NEXT: {{^}}%layers.0.lin.w = param {name = "layers.0.lin.w", init = zeros} : f32[16, 16] rep 0{{$}}
# CHECK-NEXT: [[M0:%[0-9]+]] = matmul %h, %layers.0.lin.w : f32[8, 16] rep 0{{$}}
# CHECK-NEXT: [[C0:%[0-9]+]] = const {value = 0.5} : f32[] rep 0{{$}}
# CHECK-NEXT: [[S0:%[0-9]+]] = mul [[M0]], [[C0]] : f32[8, 16] rep 0{{$}}
# CHECK-NEXT: {{^}}%layers.0.h = add %h, [[S0]] : f32[8, 16] rep 0{{$}}
# CHECK-NEXT: {{^}}%layers.1.lin.w = param {{.*}} rep 1{{$}}
# CHECK: {{^}}%layers.1.h = add %layers.0.h, {{%[0-9]+}} : f32[8, 16] rep 1{{$}}
# CHECK: {{^}}%layers.3.h = add %layers.2.h, {{%[0-9]+}} : f32[8, 16] rep 3{{$}}
# CHECK-NEXT: {{^}}%y = relu %layers.3.h : f32[8, 16]{{$}}
# CHECK-NEXT: {{^}}output "y" = %y{{$}}
# PP4: {{^}}mesh pp = 4, dp = 1{{$}}
# PP4-NEXT: {{^}}pipeline over pp repeats 4 microbatches 4 schedule 1f1b{{$}}
