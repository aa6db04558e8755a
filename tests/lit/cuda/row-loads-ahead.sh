# A thread's loop over a long row (a row kernel's, cross_entropy's) loads
# several steps ahead: the loads of up to 4 steps (16-byte vectors) into
# registers, then their elements in the plain loop's order, so each result
# keeps its bits; then the steps left, fewer than 4, loaded at once as
# well (a step past the row loads the row's end, unused) and each taken
# only where it is in the row. GPT-2's vocabulary, 50304 bf16 logits a
# row: cross_entropy's 512 threads take 12 or 13 steps (4 ahead, at most 1
# left); its gradient's 1024 take 6 or 7 in its one pass (the results from
# the forward's log-sum-exp), 4 ahead and at most 3 left, and ask for 2
# blocks a processor (32 registers a thread). A row of 12000 gives
# cross_entropy's threads 2 or 3 steps: 3 ahead, at most 2 left, and the
# same again in its second pass, the gradient's (y's loss is the last op
# of the forward, so xent_grad.c moves its gradient to just after it and
# the loss's kernel computes it; x's keeps a kernel of its own).
# RUN: %shardc %s --mesh 1 --emit cuda | FileCheck %s
mesh dp
input lab : i32[4]
input lab2 : i32[4]
param x : bf16[4, 50304] = normal(1.0)
param y : bf16[4, 12000] = normal(1.0)
loss = cross_entropy(x, lab) + cross_entropy(y, lab2)
output loss
train loss with sgd(lr = 0.1)
# CHECK: // k0_cross_entropy_cross_entropy_lse: row kernel over bf16[4, 50304] (4 rows of 50304)
# CHECK: extern "C" __global__ void __launch_bounds__(512)
# CHECK-NEXT: k0_cross_entropy_cross_entropy_lse(
# CHECK: float m = __int_as_float(0xff800000) /* -inf */, s = 0.0f;
# CHECK-NEXT: { // 4 steps' loads in flight a thread, then their elements in order
# CHECK-NEXT: i64 c0 = (i64)threadIdx.x * 8;
# CHECK-NEXT: for (; c0 + 12288 < 50304; c0 += 16384) {
# CHECK-NEXT: vec<__nv_bfloat16, 8> l_x[4];
# CHECK-NEXT: #pragma unroll
# CHECK-NEXT: for (int u = 0; u < 4; u++) {
# CHECK-NEXT: const i64 c = c0 + u * 4096;
# CHECK-NEXT: const i64 e = row * 50304 + c;
# CHECK-NEXT: l_x[u] = *reinterpret_cast<const vec<__nv_bfloat16, 8> *>(p_x + e);
# CHECK-NEXT: }
# CHECK-NEXT: #pragma unroll
# CHECK-NEXT: for (int u = 0; u < 4; u++) {
# CHECK-NEXT: float xv[8]; // the vector's elements
# CHECK: const float v_x = __bfloat162float(l_x[u].v[q]);
# CHECK: sh_online_vec(m, s, xv);
# CHECK-NEXT: }
# CHECK-NEXT: }
# CHECK-NEXT: // the steps left, at most 1: their loads, then their elements
# CHECK-NEXT: vec<__nv_bfloat16, 8> l_x[1];
# CHECK-NEXT: #pragma unroll
# CHECK-NEXT: for (int u = 0; u < 1; u++) {
# CHECK-NEXT: const i64 c = c0 + u * 4096;
# CHECK-NEXT: const i64 e = row * 50304 + (c < 50304 ? c : 50296); // past the row: its end, not used
# CHECK-NEXT: l_x[u] = *reinterpret_cast<const vec<__nv_bfloat16, 8> *>(p_x + e);
# CHECK-NEXT: }
# CHECK-NEXT: #pragma unroll
# CHECK-NEXT: for (int u = 0; u < 1; u++) {
# CHECK-NEXT: const i64 c = c0 + u * 4096;
# CHECK-NEXT: if (c < 50304) {
# CHECK-NEXT: float xv[8]; // the vector's elements
# CHECK: sh_online_vec(m, s, xv);
# CHECK-NEXT: }
# CHECK-NEXT: }
# CHECK-NEXT: }
# CHECK-NEXT: sh_block_online(m, s, red);
# CHECK: // k1_cross_entropy_cross_entropy_lse_add_cross_entropy_grad: row kernel over bf16[4, 12000] (4 rows of 12000)
# CHECK: { // 3 steps' loads in flight a thread, then their elements in order
# CHECK-NEXT: i64 c0 = (i64)threadIdx.x * 8;
# CHECK-NEXT: for (; c0 + 8192 < 12000; c0 += 12288) {
# CHECK-NEXT: vec<__nv_bfloat16, 8> l_y[3];
# CHECK: l_y[u] = *reinterpret_cast<const vec<__nv_bfloat16, 8> *>(p_y + e);
# CHECK: // the steps left, at most 2: their loads, then their elements
# CHECK-NEXT: vec<__nv_bfloat16, 8> l_y[2];
# CHECK-NEXT: #pragma unroll
# CHECK-NEXT: for (int u = 0; u < 2; u++) {
# CHECK-NEXT: const i64 c = c0 + u * 4096;
# CHECK-NEXT: const i64 e = row * 12000 + (c < 12000 ? c : 11992); // past the row: its end, not used
# CHECK: if (c < 12000) {
# CHECK: sh_online_vec(m, s, xv);
# CHECK: const float lse = m + logf(s); // cross_entropy_lse's, as it is stored
# CHECK-NEXT: { // 3 steps' loads in flight a thread, then their elements in order
# CHECK: // the steps left, at most 2: their loads, then their elements
# CHECK: sh_xent_grad(xin, lse, 1.0f, c + q, lab, 12000)
# CHECK: // k2_cross_entropy_grad_mul: row kernel over bf16[4, 50304] (4 rows of 50304)
# CHECK: extern "C" __global__ void __launch_bounds__(1024, 2)
# CHECK-NEXT: k2_cross_entropy_grad_mul(
# CHECK-NOT: acc2
# CHECK: const float lse = p_t{{[0-9]+}}[row]; // cross_entropy_lse, kept from the forward
# CHECK-NEXT: { // 4 steps' loads in flight a thread, then their elements in order
# CHECK-NEXT: i64 c0 = (i64)threadIdx.x * 8;
# CHECK-NEXT: for (; c0 + 24576 < 50304; c0 += 32768) {
# CHECK-NEXT: vec<__nv_bfloat16, 8> l_x[4];
# CHECK-NEXT: #pragma unroll
# CHECK-NEXT: for (int u = 0; u < 4; u++) {
# CHECK-NEXT: const i64 c = c0 + u * 8192;
# CHECK-NEXT: const i64 e = row * 50304 + c;
# CHECK-NEXT: l_x[u] = *reinterpret_cast<const vec<__nv_bfloat16, 8> *>(p_x + e);
# CHECK-NEXT: }
# CHECK-NEXT: #pragma unroll
# CHECK-NEXT: for (int u = 0; u < 4; u++) {
# CHECK-NEXT: const i64 c = c0 + u * 8192;
# CHECK-NEXT: const i64 e = row * 50304 + c;
# CHECK: const float v_x = __bfloat162float(l_x[u].v[q]);
# CHECK: sh_xent_grad(xin, lse, 1.0f, c + q, lab, 50304)
# CHECK: *reinterpret_cast<vec<__nv_bfloat16, 8> *>(p_t{{[0-9]+}} + e) = s_t{{[0-9]+}};
# CHECK-NEXT: }
# CHECK-NEXT: }
# CHECK-NEXT: // the steps left, at most 3: their loads, then their elements
# CHECK-NEXT: vec<__nv_bfloat16, 8> l_x[3];
# CHECK-NEXT: #pragma unroll
# CHECK-NEXT: for (int u = 0; u < 3; u++) {
# CHECK-NEXT: const i64 c = c0 + u * 8192;
# CHECK-NEXT: const i64 e = row * 50304 + (c < 50304 ? c : 50296); // past the row: its end, not used
# CHECK-NEXT: l_x[u] = *reinterpret_cast<const vec<__nv_bfloat16, 8> *>(p_x + e);
# CHECK-NEXT: }
# CHECK-NEXT: #pragma unroll
# CHECK-NEXT: for (int u = 0; u < 3; u++) {
# CHECK-NEXT: const i64 c = c0 + u * 8192;
# CHECK-NEXT: if (c < 50304) {
# CHECK-NEXT: const i64 e = row * 50304 + c;
# CHECK: sh_xent_grad(xin, lse, 1.0f, c + q, lab, 50304)
# CHECK: *reinterpret_cast<vec<__nv_bfloat16, 8> *>(p_t{{[0-9]+}} + e) = s_t{{[0-9]+}};
# CHECK-NEXT: }
# CHECK-NEXT: }
# CHECK-NEXT: }
# CHECK-NEXT: }
# CHECK-NEXT: }
