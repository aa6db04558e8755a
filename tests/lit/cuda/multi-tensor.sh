# The optimizer's updates of w ([8, 16]) and b ([3]) are one multi-tensor
# kernel: each part's elements in blocks, part after part (w: 32 steps of
# 4 elements; b: 3 steps of 1, its last dim not divisible by 4), every
# block running one part (the blocks grid-strided), and adamw's bias
# corrections computed once for both (same step, lr, beta1 and beta2).
# RUN: %shardc %s --emit cuda | FileCheck %s
input  x : f32[4, 8]
param  w : f32[8, 16] = ones
param  b : f32[3] = ones
h = x @ w
loss = mean(sum(h, axis = 1), axis = 0) + sum(b, axis = 0)
output loss
train loss with adamw(lr = 3e-4, beta1 = 0.9, beta2 = 0.95, eps = 1e-8, wd = 0.1)
# CHECK: // [[K:k[0-9]+_adam_m_adam_v_adamw_x2]]: multi-tensor elementwise kernel over 2 tensors
# CHECK-NEXT: // part 0, over f32[8, 16]
# CHECK-NEXT: //   %[[M:[0-9]+]] = adam_m %{{[0-9]+}}, %{{[0-9]+}}  (stored)
# CHECK-NEXT: //   %{{[0-9]+}} = adam_v
# CHECK-NEXT: //   %[[P:[0-9]+]] = adamw %w, %[[M]], %{{[0-9]+}}, %[[T:[0-9]+]]  (stored)
# CHECK-NEXT: // part 1, over f32[3]
# CHECK-NEXT: //   %{{[0-9]+}} = adam_m
# CHECK-NEXT: //   %{{[0-9]+}} = adam_v
# CHECK-NEXT: //   %[[Q:[0-9]+]] = adamw %b, %{{[0-9]+}}, %{{[0-9]+}}, %[[T]]  (stored)
# CHECK-NEXT: // launch: grid (2, 1, 1), block (32, 1, 1), 0 bytes of dynamic shared memory
# CHECK: extern "C" __global__ void __launch_bounds__(32)
# CHECK-NEXT: [[K]](
# CHECK: float step_t[[P]], vscale_t[[P]]; // adamw's bias corrections for the step t
# CHECK-NEXT: sh_adamw_coef(p_t[[T]][0], 0.0003, 0.9, 0.95, &step_t[[P]], &vscale_t[[P]]);
# CHECK-NOT: sh_adamw_coef
# CHECK: for (i64 b = blockIdx.x; b < 2; b += gridDim.x) {
# CHECK-NEXT: if (b < 1) { // part 0: %[[P]], blocks 0 .. 0
# CHECK-NEXT: const i64 i = (b - 0) * 32 + threadIdx.x;
# CHECK-NEXT: if (i < 32) {
# CHECK-NEXT: const i64 e = i * 4;
# CHECK: const vec<float, 4> l_w = *reinterpret_cast<const vec<float, 4> *>(p_w + e);
# CHECK: = v_w * 0.99997f - step_t[[P]] *
# CHECK: } else { // part 1: %[[Q]], blocks 1 .. 1
# CHECK-NEXT: const i64 i = (b - 1) * 32 + threadIdx.x;
# CHECK-NEXT: if (i < 3) {
# CHECK-NEXT: const i64 e = i;
# CHECK: const float v_b = p_b[e];
# CHECK: = v_b * 0.99997f - step_t[[P]] *
# CHECK: p_t[[Q]][e] = v_t[[Q]];
