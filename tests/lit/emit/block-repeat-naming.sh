# Inside `repeat L as layers` a param is named layers.I.BLOCK.NAME; a block
# called twice in one repetition gives layers.I.mlp and layers.I.mlp.1; the
# call count starts afresh in each repetition; nested blocks chain.
# RUN: %shardc %s --mesh 2x2 --emit ir | FileCheck %s
# RUN: %shardc %s --mesh 2x2 -D L=4 --emit ir | FileCheck %s --check-prefix=L4
mesh dp, tp
let B = 8, D = 16, H = 32, L = 2
input x : f32[B, D] shard(dp, _)
block mlp(x : f32[B, D]) -> f32[B, D] {
    param w1 : f32[D, H] shard(_, tp) = normal(0.02)
    param w2 : f32[H, D] shard(tp, _) = normal(0.02)
    return gelu(x @ w1) @ w2
}
block lin(x : f32[B, D]) -> f32[B, D] {
    param w : f32[D, D] = zeros
    return x @ w
}
block res(x : f32[B, D]) -> f32[B, D] {
    return x + lin(x)
}
repeat L as layers {
    x = x + mlp(x) + mlp(x)
    x = res(x)
}
y = mlp(x)
output y
# CHECK: {{^}}%layers.0.mlp.w1 = param {name = "layers.0.mlp.w1", init = normal(0.02)} : f32[16, 32] shard(_, tp){{$}}
# CHECK-NEXT: {{^}}%layers.0.mlp.w2 = param {name = "layers.0.mlp.w2", init = normal(0.02)} : f32[32, 16] shard(tp, _){{$}}
# CHECK: {{^}}%layers.0.mlp.1.w1 = param {name = "layers.0.mlp.1.w1"
# CHECK-NEXT: {{^}}%layers.0.mlp.1.w2 = param {name = "layers.0.mlp.1.w2"
# CHECK: {{^}}%layers.0.res.lin.w = param {name = "layers.0.res.lin.w", init = zeros} : f32[16, 16]{{$}}
# CHECK: {{^}}%layers.1.mlp.w1 = param {name = "layers.1.mlp.w1"
# CHECK: {{^}}%layers.1.mlp.1.w1 = param {name = "layers.1.mlp.1.w1"
# CHECK: {{^}}%layers.1.res.lin.w = param {name = "layers.1.res.lin.w"
# CHECK-NOT: layers.2.
# The call after the repeat is the first call of mlp outside it.
# CHECK: {{^}}%mlp.w1 = param {name = "mlp.w1"
# CHECK-NEXT: {{^}}%mlp.w2 = param {name = "mlp.w2"
# CHECK-NOT: {{^}}%{{.*}} = param
# CHECK: {{^}}output "y" = %y{{$}}
# L4: {{^}}%layers.3.mlp.w1 = param {name = "layers.3.mlp.w1"
# L4: {{^}}%layers.3.mlp.1.w1 = param {name = "layers.3.mlp.1.w1"
# L4: {{^}}%layers.3.res.lin.w = param {name = "layers.3.res.lin.w"
# L4-NOT: layers.4.
