# Parameter names of block calls outside any repeat: the first call adds the
# block's name (mlp.w1), later calls .1, .2 (mlp.1.w1, mlp.2.w1); nested
# blocks chain (outer.inner.w, outer.inner.1.w). Params are made per call.
# RUN: %shardc %s --mesh 2x2 --emit ir | FileCheck %s
mesh dp, tp
let B = 8, D = 16, H = 32
input x : f32[B, D] shard(dp, _)
block mlp(x : f32[B, D]) -> f32[B, D] {
    param w1 : f32[D, H] shard(_, tp) = normal(0.02)
    param w2 : f32[H, D] shard(tp, _) = normal(0.02)
    h = gelu(x @ w1)
    return h @ w2
}
block inner(x : f32[B, D]) -> f32[B, D] {
    param w : f32[D, D] = zeros
    return x @ w
}
block outer(x : f32[B, D]) -> f32[B, D] {
    param w : f32[D, D] = ones
    y = inner(x) + inner(x)
    return y @ w
}
y = mlp(x)
z = mlp(y)
o = outer(z)
p = mlp(o)
output p
# CHECK: {{^}}%mlp.w1 = param {name = "mlp.w1", init = normal(0.02)} : f32[16, 32] shard(_, tp){{$}}
# CHECK-NEXT: {{^}}%mlp.w2 = param {name = "mlp.w2", init = normal(0.02)} : f32[32, 16] shard(tp, _){{$}}
# CHECK-NEXT: [[T0:%[0-9]+]] = matmul %x, %mlp.w1 : f32[8, 32]
# CHECK-NEXT: {{^}}%mlp.h = gelu [[T0]] : f32[8, 32]{{$}}
# CHECK-NEXT: {{^}}%y = matmul %mlp.h, %mlp.w2 : f32[8, 16]{{$}}
# CHECK-NEXT: {{^}}%mlp.1.w1 = param {name = "mlp.1.w1", init = normal(0.02)} : f32[16, 32] shard(_, tp){{$}}
# CHECK-NEXT: {{^}}%mlp.1.w2 = param {name = "mlp.1.w2", init = normal(0.02)} : f32[32, 16] shard(tp, _){{$}}
# CHECK-NEXT: [[T1:%[0-9]+]] = matmul %y, %mlp.1.w1 : f32[8, 32]
# CHECK-NEXT: {{^}}%mlp.1.h = gelu [[T1]] : f32[8, 32]{{$}}
# CHECK-NEXT: {{^}}%z = matmul %mlp.1.h, %mlp.1.w2 : f32[8, 16]{{$}}
# CHECK-NEXT: {{^}}%outer.w = param {name = "outer.w", init = ones} : f32[16, 16]{{$}}
# CHECK-NEXT: {{^}}%outer.inner.w = param {name = "outer.inner.w", init = zeros} : f32[16, 16]{{$}}
# CHECK-NEXT: [[I0:%[0-9]+]] = matmul %z, %outer.inner.w : f32[8, 16]
# CHECK-NEXT: {{^}}%outer.inner.1.w = param {name = "outer.inner.1.w", init = zeros} : f32[16, 16]{{$}}
# CHECK-NEXT: [[I1:%[0-9]+]] = matmul %z, %outer.inner.1.w : f32[8, 16]
# CHECK-NEXT: {{^}}%outer.y = add [[I0]], [[I1]] : f32[8, 16]{{$}}
# CHECK-NEXT: {{^}}%o = matmul %outer.y, %outer.w : f32[8, 16]{{$}}
# CHECK-NEXT: {{^}}%mlp.2.w1 = param {name = "mlp.2.w1", init = normal(0.02)} : f32[16, 32] shard(_, tp){{$}}
# CHECK: {{^}}%p = matmul %mlp.2.h, %mlp.2.w2 : f32[8, 16]{{$}}
# CHECK-NEXT: {{^}}output "p" = %p{{$}}
