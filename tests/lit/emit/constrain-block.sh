# Constraints inside a block and a repeat, and on a block call's result: an
# unnamed result the call just made takes the annotation; a block that
# returns its argument unchanged gets a constrain op.
# RUN: %shardc %s --mesh 2x2 --emit ir | FileCheck %s
mesh dp, tp
let B = 8, D = 16
input x : f32[B, D] shard(dp, _)
block mlp(x : f32[B, D]) -> f32[B, D] {
    param w : f32[D, D] = zeros
    h = relu(x @ w) shard(dp, tp)
    return h @ w
}
block ident(x : f32[B, D]) -> f32[B, D] {
    return x
}
y = mlp(x) shard(_, tp)
z = ident(y) shard(dp, _)
repeat 2 as r {
    z = z * 2 shard((dp, tp), _)
}
output z
# CHECK: [[M:%[0-9]+]] = matmul %x, %mlp.w : f32[8, 16]{{$}}
# CHECK-NEXT: {{^}}%mlp.h = relu [[M]] : f32[8, 16] shard(dp, tp){{$}}
# CHECK-NEXT: {{^}}%y = matmul %mlp.h, %mlp.w : f32[8, 16] shard(_, tp){{$}}
# CHECK-NEXT: {{^}}%z = constrain %y : f32[8, 16] shard(dp, _){{$}}
# CHECK-NEXT: [[C0:%[0-9]+]] = const {value = 2.0} : f32[]{{$}}
# CHECK-NEXT: {{^}}%r.0.z = mul %z, [[C0]] : f32[8, 16] shard((dp, tp), _){{$}}
# CHECK-NEXT: [[C1:%[0-9]+]] = const {value = 2.0} : f32[]{{$}}
# CHECK-NEXT: {{^}}%r.1.z = mul %r.0.z, [[C1]] : f32[8, 16] shard((dp, tp), _){{$}}
# CHECK-NEXT: {{^}}output "z" = %r.1.z{{$}}
