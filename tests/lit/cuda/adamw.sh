# A training step with adamw: each param's adam_m, adam_v and adamw are one
# kernel that stores the new moments and the new param. The coefficients
# are folded as the CPU backend folds them: 1 - beta1 and 1 - beta2 in
# double, then f32; the bias corrections lr / (1 - beta1^t) and
# 1 / (1 - beta2^t) of the step t (a state read once per thread, pow in
# double); the decay 1 - lr * wd. A new param may take its old value's
# memory, so the pointers are not __restrict__.
# RUN: %shardc %s --emit cuda | FileCheck %s
input  x : f32[4, 8]
param  w : f32[8] = ones
loss = mean(sum(x * w, axis = 1), axis = 0)
output loss
train loss with adamw(lr = 3e-4, beta1 = 0.9, beta2 = 0.95, eps = 1e-8, wd = 0.1)
# CHECK: _adam_m_adam_v_adamw: elementwise kernel over f32[8]
# CHECK: //   %[[M:[0-9]+]] = adam_m %{{[0-9]+}}, %[[G:[0-9]+]]  (stored)
# CHECK-NEXT: //   %[[V:[0-9]+]] = adam_v %{{[0-9]+}}, %[[G]]  (stored)
# CHECK-NEXT: //   %[[P:[0-9]+]] = adamw %w, %[[M]], %[[V]], %[[T:[0-9]+]]  (stored)
# CHECK: __device__ __forceinline__ void sh_adamw_coef(float t, double lr, double beta1, double beta2,
# CHECK: *step = (float)(lr / (1.0 - pow(beta1, (double)t)));
# CHECK-NEXT: *vscale = (float)(1.0 / (1.0 - pow(beta2, (double)t)));
# CHECK: const float *p_w,
# CHECK: float *p_t[[P]])
# CHECK-NEXT: {
# CHECK-NEXT: float step_t[[P]], vscale_t[[P]]; // adamw's bias corrections for the step t
# CHECK-NEXT: sh_adamw_coef(p_t[[T]][0], 0.0003, 0.9, 0.95, &step_t[[P]], &vscale_t[[P]]);
# CHECK: const float v_t[[M]] = 0.9f * v_t{{[0-9]+}} + 0.1f * v_t[[G]]; // adam_m
# CHECK-NEXT: const float v_t[[V]] = 0.95f * v_t{{[0-9]+}} + 0.05f * v_t[[G]] * v_t[[G]]; // adam_v
# CHECK-NEXT: const float v_t[[P]] = v_w * 0.99997f - step_t[[P]] * v_t[[M]] / (sqrtf(v_t[[V]] * vscale_t[[P]]) + 1e-08f); // adamw
