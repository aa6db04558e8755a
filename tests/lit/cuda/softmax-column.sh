# softmax over a leading axis: one thread per column (coalesced across
# threads), looping over the axis twice: the max and the sum of exp(x -
# max) in one pass (online: sh_online rescales the sum when the max
# grows), then the results; no shared memory.
# RUN: %shardc %s --emit cuda | FileCheck %s
input x : f32[6, 10, 3]
p = softmax(x, axis = 1)
output p
# CHECK: // k0_softmax: column kernel over f32[6, 10, 3] (18 rows of 10, strided)
# CHECK: // launch: grid (1, 1, 1), block (32, 1, 1), 0 bytes of dynamic shared memory
# CHECK-NEXT: // one thread per result, looping over the reduced axis
# CHECK: __device__ __forceinline__ void sh_online(float &m, float &s, float x)
# CHECK: for (i64 t = (i64)blockIdx.x * blockDim.x + threadIdx.x; t < 18; t += stride) {
# CHECK-NEXT: const i64 base = t / 3 * 30 + t % 3;
# CHECK-NEXT: float acc = __int_as_float(0xff800000) /* -inf */;
# CHECK-NEXT: float acc2 = 0.0f;
# CHECK-NEXT: for (i64 k = 0; k < 10; k++) {
# CHECK-NEXT: const i64 e = base + k * 3;
# CHECK: sh_online(acc, acc2, xin);
# CHECK: const float mx = acc, scale = 1.0f / acc2;
# CHECK-NEXT: for (i64 k = 0; k < 10; k++) {
# CHECK: const float v_p = expf(xin - mx) * scale; // softmax
# CHECK-NEXT: p_p[e] = v_p;
# CHECK-NOT: for (i64 k
