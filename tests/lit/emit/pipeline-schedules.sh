# The schedules gpipe and interleaved(V); microbatches is a constant
# expression (-D overrides it); the pipelined repeat may be the last statement
# before `output`, and `pipeline` may come before the repeat.
# RUN: %shardc %s --mesh 2x2 --emit ir | FileCheck %s
# RUN: %shardc %s --mesh 2x2 -D M=8 --emit ir | FileCheck %s --check-prefix=M8
mesh pp, dp
let B = 16, D = 8, M = 2 * 2
pipeline microbatches M schedule gpipe
input x : f32[B, D] shard(dp, _)
repeat 4 as layers over pp {
    param w : f32[D, D] = zeros
    x = x @ w
}
output x
# CHECK: {{^}}mesh pp = 2, dp = 2{{$}}
# CHECK-NEXT: {{^}}pipeline over pp repeats 4 microbatches 4 schedule gpipe{{$}}
# CHECK: {{^}}%layers.0.w = param {name = "layers.0.w", init = zeros} : f32[8, 8] rep 0{{$}}
# CHECK-NEXT: {{^}}%layers.0.x = matmul %x, %layers.0.w : f32[16, 8] rep 0{{$}}
# CHECK: {{^}}%layers.3.x = matmul %layers.2.x, %layers.3.w : f32[16, 8] rep 3{{$}}
# CHECK-NEXT: {{^}}output "x" = %layers.3.x{{$}}
# M8: {{^}}pipeline over pp repeats 4 microbatches 8 schedule gpipe{{$}}
