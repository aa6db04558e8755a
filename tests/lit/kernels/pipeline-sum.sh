# A pipeline stage sums each gradient over its microbatches: the backward
# of every microbatch after the first adds its part to the sum so far. That
# add stays out of the matmul's kernel (cuBLASLt's residual epilogue) and
# the reduction's (an epilogue after the sum over rows) that make the part,
# in an elementwise kernel of its own (passes/fuse.h), so that the new sum
# takes the old one's buffer: on stage 0, b's sums over three microbatches
# (%11, %18, %26) are one buffer, and w's (%12, %20, %28) another, as they
# are without kernels. Fused, each sum was a kernel's result, written while
# the sum before it was still live: six buffers, and a microbatch's sum in
# another place than the one before's (the plan's loop form then held a
# slot for each). On the CPU the plan computes what the plan without
# kernels does, to the bit.
# RUN: %shardc %s --mesh 2 --arch sm_80 --emit fused-ir | FileCheck %s --check-prefix=FUSED
# RUN: %shardc %s --mesh 2 --arch sm_80 --print-after=memplan -o %t.plan 2>&1 | FileCheck %s --check-prefix=MEM
# RUN: %shardc %s --mesh 2 --arch none -o %t.none.plan
# RUN: %shardrun %t.plan --steps 2 --save-params %t.st
# RUN: %shardrun %t.none.plan --steps 2 --save-params %t.none.st
# RUN: cmp %t.st %t.none.st
mesh pp
input x : f32[6, 4]
block layer(h : f32[6, 4]) -> f32[6, 4] {
    param w : f32[4, 4] = normal(0.5)
    param b : f32[4] = zeros
    return tanh(h @ w + b)
}
repeat 2 as layers over pp { x = layer(x) }
loss = mean(sum(x, axis = 1), axis = 0)
train loss with sgd(lr = 0.1)
pipeline microbatches 3 schedule gpipe

# FUSED-LABEL: // ---- stage 0 of 2 ----
# FUSED:      %11 = sum %10 {axis = 0, keepdims = false} : f32[4] {{.*}} // k6_mul_sub_sum, stored
# FUSED-NEXT: %12 = matmul %x.2, %10 {trans = a} : f32[4, 4] {{.*}} phase backward{{$}}
# FUSED:      %17 = sum %16 {{.*}} // k7_mul_sub_sum, stored
# FUSED-NEXT: // kernel k8_add: elementwise over [4]; reads %11, %17; stores %18
# FUSED-NEXT: %18 = add %11, %17
# FUSED-NEXT: %19 = matmul %x.4, %16 {trans = a} : f32[4, 4] {{.*}} phase backward{{$}}
# FUSED-NEXT: // kernel k9_add: elementwise over [4, 4]; reads %12, %19; stores %20
# FUSED-NEXT: %20 = add %12, %19
# FUSED:      // kernel k11_add: elementwise over [4]; reads %18, %25; stores %26
# FUSED:      // kernel k12_add: elementwise over [4, 4]; reads %20, %27; stores %28
# FUSED-LABEL: // ---- stage 1 of 2 ----

# MEM-LABEL: // ---- stage 0 of 2 ----
# MEM: %11: buffer [[B:[0-9]+]], 16 bytes at [[BAT:[0-9]+]], live 26..45
# MEM: %12: buffer [[W:[0-9]+]], 64 bytes at [[WAT:[0-9]+]], live 27..45
# MEM: %18: buffer [[B]], 16 bytes at [[BAT]], live 26..45
# MEM: %20: buffer [[W]], 64 bytes at [[WAT]], live 27..45
# MEM: %26: buffer [[B]], 16 bytes at [[BAT]], live 26..45
# MEM: %28: buffer [[W]], 64 bytes at [[WAT]], live 27..45
# MEM-LABEL: // ---- stage 1 of 2 ----
