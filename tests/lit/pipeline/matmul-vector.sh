# A matmul with a 1-D operand keeps the batch where it is: [B, S, K] @ [K]
# gives [B, S] and [S] @ [B, S, K] gives [B, K], both split into
# microbatches (their batch is dimension 0, not contracted). The
# gradients of the 1-D params are sums over the batch rows, accumulated
# over the microbatches: w's, a product per row summed, is one product
# over the microbatch's 12 rows (the batch rule, on the stage's program).
# RUN: %shardc %s --mesh 2 --emit stage-ir | FileCheck %s
mesh pp
input x : f32[8, 3, 4]
block layer(h : f32[8, 3, 4]) -> f32[8, 3, 4] {
    param w : f32[4] = normal(0.5)
    param v : f32[3] = normal(0.5)
    a = reshape(h @ w, [8, 3, 1])
    b = reshape(v @ h, [8, 1, 4])
    return tanh(h * a + b)
}
repeat 2 as layers over pp { x = layer(x) }
loss = mean(sum(sum(x, axis = 2), axis = 1), axis = 0)
train loss with sgd(lr = 0.1)
pipeline microbatches 2 schedule gpipe

# CHECK-LABEL: // ---- stage 0 of 2 ----
# CHECK: %x.2 = extract %x.1 {shape = [4, 3, 4], offset = 0} : f32[4, 3, 4]
# CHECK: matmul %x.2, %layers.0.layer.w : f32[4, 3]
# CHECK: matmul %layers.0.layer.v, %x.2 : f32[4, 4]
# CHECK: %x.4 = extract %x.3 {shape = [4, 3, 4], offset = 48} : f32[4, 3, 4]
# CHECK: matmul %x.4, %layers.0.layer.w : f32[4, 3]
# CHECK: matmul %layers.0.layer.v, %x.4 : f32[4, 4]
# CHECK: %[[V0:[0-9]+]] = sum {{%[0-9]+}} {axis = 0, keepdims = false} : f32[1, 3] {{.*}} phase backward
# CHECK: %[[W0:[0-9]+]] = matmul {{%[0-9]+}}, {{%[0-9]+}} {trans = a} : f32[4, 1] {{.*}} phase backward
# CHECK: %[[V1:[0-9]+]] = sum {{%[0-9]+}} {axis = 0, keepdims = false} : f32[1, 3] {{.*}} phase backward
# CHECK-NEXT: add %[[V0]], %[[V1]] : f32[1, 3]
# CHECK: %[[W1:[0-9]+]] = matmul {{%[0-9]+}}, {{%[0-9]+}} {trans = a} : f32[4, 1] {{.*}} phase backward
# CHECK-NEXT: add %[[W0]], %[[W1]] : f32[4, 1]
# CHECK: update %layers.0.layer.w
# CHECK-LABEL: // ---- stage 1 of 2 ----
# CHECK: matmul %layers.0.x, %layers.1.layer.w : f32[4, 3]
# CHECK: matmul %layers.1.layer.v, %layers.0.x : f32[4, 4]
