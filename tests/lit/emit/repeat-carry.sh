# `repeat N as NAME` unrolls its body N times; a name assigned in the body
# carries into the next repetition, and out of the repeat.
# RUN: %shardc %s --mesh 2x2 --emit ir | FileCheck %s
mesh dp, tp
let B = 8, D = 16
input x : f32[B, D] shard(dp, _)
h = x
repeat 3 as r {
    param w : f32[D, D] shard(_, tp) = zeros
    h = relu(h @ w)
}
out = h * 2
output out
# CHECK: {{^}}%r.0.w = param {name = "r.0.w", init = zeros} : f32[16, 16] shard(_, tp){{$}}
# CHECK-NEXT: [[M0:%[0-9]+]] = matmul %x, %r.0.w : f32[8, 16]
# CHECK-NEXT: [[H0:%[a-z0-9_.]+]] = relu [[M0]] : f32[8, 16]
# CHECK-NEXT: {{^}}%r.1.w = param {name = "r.1.w", init = zeros} : f32[16, 16] shard(_, tp){{$}}
# CHECK-NEXT: [[M1:%[0-9]+]] = matmul [[H0]], %r.1.w : f32[8, 16]
# CHECK-NEXT: [[H1:%[a-z0-9_.]+]] = relu [[M1]] : f32[8, 16]
# CHECK-NEXT: {{^}}%r.2.w = param {name = "r.2.w", init = zeros} : f32[16, 16] shard(_, tp){{$}}
# CHECK-NEXT: [[M2:%[0-9]+]] = matmul [[H1]], %r.2.w : f32[8, 16]
# CHECK-NEXT: [[H2:%[a-z0-9_.]+]] = relu [[M2]] : f32[8, 16]
# CHECK-NEXT: [[C:%[0-9]+]] = const {value = 2.0} : f32[]
# CHECK-NEXT: {{^}}%out = mul [[H2]], [[C]] : f32[8, 16]{{$}}
# CHECK-NOT: param
