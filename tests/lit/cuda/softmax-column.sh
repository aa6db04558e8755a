# softmax over a leading axis: one thread per column (coalesced across
# threads), looping over the axis three times; no shared memory.
# RUN: %shardc %s --emit cuda | FileCheck %s
input x : f32[6, 10, 3]
p = softmax(x, axis = 1)
output p
# CHECK: // k0_softmax: column kernel over f32[6, 10, 3] (18 rows of 10, strided)
# CHECK: // launch: grid (1, 1, 1), block (32, 1, 1), 0 bytes of dynamic shared memory
# CHECK-NEXT: // one thread per result, looping over the reduced axis
# CHECK: for (i64 t = (i64)blockIdx.x * blockDim.x + threadIdx.x; t < 18; t += stride) {
# CHECK-NEXT: const i64 base = t / 3 * 30 + t % 3;
# CHECK: for (i64 k = 0; k < 10; k++) {
# CHECK-NEXT: const i64 e = base + k * 3;
# CHECK: acc = fmaxf(acc, xin);
# CHECK: const float mx = acc;
# CHECK: const float scale = 1.0f / acc2;
# CHECK: const float v_p = expf(xin - mx) * scale; // softmax
# CHECK-NEXT: p_p[e] = v_p;
