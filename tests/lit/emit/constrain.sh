# A sharding constraint after an assignment. On a value the statement just
# made, the op's result carries shard(...) itself; on an existing value
# (a name, an input) a `constrain` op carries it and the original keeps its own.
# RUN: %shardc %s --mesh 2x2 --emit ir | FileCheck %s
mesh dp, tp
let B = 8, D = 16, H = 32
input x : f32[B, D] shard(dp, _)
param w : f32[D, H] shard(_, tp) = zeros
h = gelu(x @ w) shard(dp, tp)
g = h shard((dp, tp), _)
x2 = x shard(_, _)
k = h + 1.0
k = k shard(dp, _)
output g, x2, k
# CHECK: [[MM:%[0-9]+]] = matmul %x, %w : f32[8, 32]{{$}}
# CHECK-NEXT: {{^}}%h = gelu [[MM]] : f32[8, 32] shard(dp, tp){{$}}
# CHECK-NEXT: {{^}}%g = constrain %h : f32[8, 32] shard((dp, tp), _){{$}}
# CHECK-NEXT: {{^}}%x2 = constrain %x : f32[8, 16] shard(_, _){{$}}
# CHECK-NEXT: {{^}}[[ONE:%[0-9]+]] = const {value = 1.0} : f32[]{{$}}
# CHECK-NEXT: {{^}}%k = add %h, [[ONE]] : f32[8, 32]{{$}}
# CHECK-NEXT: {{^}}[[K2:%[a-z0-9_.]+]] = constrain %k : f32[8, 32] shard(dp, _){{$}}
# CHECK: output "g" = %g
# CHECK-NEXT: output "x2" = %x2
# CHECK-NEXT: output "k" = [[K2]]
