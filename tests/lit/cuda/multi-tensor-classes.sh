# Parts of a multi-tensor kernel that run the same code on their own
# tensors share one body: w2 and w3 (f32, VEC 4, adamw with w1's hoisted
# coefficients) are one class, its blocks next to each other, each block
# finding its part's first block, steps and pointers before the one tile.
# w1 owns the coefficients and keeps its own code; b (VEC 1) too.
# RUN: %shardc %s --emit cuda | FileCheck %s
input  x : f32[4, 8]
param  w1 : f32[8, 16] = ones
param  w2 : f32[16, 16] = ones
param  w3 : f32[16, 8] = ones
param  b : f32[3] = ones
h = x @ w1 @ w2 @ w3
loss = mean(sum(h, axis = 1), axis = 0) + sum(b, axis = 0)
output loss
train loss with adamw(lr = 3e-4, beta1 = 0.9, beta2 = 0.95, eps = 1e-8, wd = 0.1)
# CHECK: multi-tensor elementwise kernel over 4 tensors
# CHECK: float step_t[[P:[0-9]+]], vscale_t[[P]];
# CHECK: for (i64 b = blockIdx.x; b < 4; b += gridDim.x) {
# CHECK-NEXT: if (b < 1) { // part 0: %[[P]], blocks 0 .. 0
# CHECK: const vec<float, 4> l_w1 = *reinterpret_cast<const vec<float, 4> *>(p_w1 + e);
# CHECK: } else if (b < 3) { // parts 1 and 1 more like it, blocks 1 .. 2: one code
# CHECK-NEXT: const float *p_q0;
# CHECK: float *p_q6;
# CHECK-NEXT: i64 first, steps;
# CHECK-NEXT: if (b < 2) { // part 1: %[[W2:[0-9]+]]
# CHECK-NEXT: first = 1;
# CHECK-NEXT: steps = 64;
# CHECK: p_q3 = p_w2;
# CHECK: p_q6 = p_t[[W2]];
# CHECK-NEXT: } else { // part 2: %[[W3:[0-9]+]]
# CHECK-NEXT: first = 2;
# CHECK-NEXT: steps = 32;
# CHECK: p_q3 = p_w3;
# CHECK: p_q6 = p_t[[W3]];
# CHECK-NEXT: }
# CHECK-NEXT: const i64 i = (b - first) * 64 + threadIdx.x;
# CHECK-NEXT: if (i < steps) {
# CHECK-NEXT: const i64 e = i * 4;
# CHECK: const float v_q6 = v_q3 * 0.99997f - step_t[[P]] * v_q4 / (sqrtf(v_q5 * vscale_t[[P]]) + 1e-08f); // adamw
# CHECK: *reinterpret_cast<vec<float, 4> *>(p_q6 + e) = s_q6;
# CHECK-NOT: p_w2
# CHECK-NOT: p_w3
# CHECK: } else { // part 3: %{{[0-9]+}}, blocks 3 .. 3
# CHECK: const float v_b = p_b[e];
