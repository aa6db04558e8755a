# NumPy broadcasting: each operand is read at its own offset of the
# domain's element e, with the dims merged where it is contiguous or
# broadcast: [16] reads e % 16, [4, 8, 1] reads e / 16 (one value for the
# four elements of a vector step), [8, 16] reads e % 128, and [4, 1, 16]
# reads two terms. A last dim that 4 does not divide means scalar steps.
# RUN: %shardc %s --emit cuda | FileCheck %s
input  x : f32[4, 8, 16]
input  b : f32[16]
input  c : f32[4, 8, 1]
input  d : f32[8, 16]
input  f : f32[4, 1, 16]
input  u : f32[3, 5]
input  v : f32[5]
y = x + b + c + d + f
z = u * v
output y, z
# CHECK: // k0_add: elementwise kernel over f32[4, 8, 16]
# CHECK: l_x = *reinterpret_cast<const vec<float, 4> *>(p_x + e);
# CHECK-NEXT: l_b = *reinterpret_cast<const vec<float, 4> *>(p_b + e % 16);
# CHECK-NEXT: const float v_c = p_c[e / 16];
# CHECK-NEXT: l_d = *reinterpret_cast<const vec<float, 4> *>(p_d + e % 128);
# CHECK-NEXT: l_f = *reinterpret_cast<const vec<float, 4> *>(p_f + ((e / 128) * 16 + e % 16));
# CHECK: const float v_y = v_t2 + v_f; // add
# CHECK: // k1_mul: elementwise kernel over f32[3, 5]
# CHECK: // one thread per element, grid-stride
# CHECK: for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < 15; i += stride) {
# CHECK-NEXT: const i64 e = i;
# CHECK-NEXT: const float v_u = p_u[e];
# CHECK-NEXT: const float v_v = p_v[e % 5];
# CHECK-NEXT: const float v_z = v_u * v_v; // mul
# CHECK-NEXT: p_z[e] = v_z;
