# The same chain in bf16: loads widen to f32, every op computes in f32 and
# rounds its result to bf16 (as the CPU backend's promoted kernels do),
# stores narrow to bf16 again, with cuda_bf16.h included; a thread takes 8
# elements, one 16-byte load of each operand.
# RUN: %shardc %s --mesh 2 --emit cuda | FileCheck %s
mesh dp
input  x : bf16[8, 64] shard(dp, _)
param  b : bf16[64] = zeros
y = gelu(x + b) * 2
output y
# CHECK: // k0_add_gelu_mul: elementwise kernel over bf16[4, 64]
# CHECK: #include <cuda_bf16.h>
# CHECK-NOT: #include
# CHECK: __device__ __forceinline__ float sh_bf16(float v)
# CHECK-NEXT: {
# CHECK-NEXT: return __bfloat162float(__float2bfloat16_rn(v));
# CHECK: const __nv_bfloat16 *__restrict__ p_x,
# CHECK: __nv_bfloat16 *__restrict__ p_y)
# CHECK: const i64 e = i * 8;
# CHECK: const vec<__nv_bfloat16, 8> l_x = *reinterpret_cast<const vec<__nv_bfloat16, 8> *>(p_x + e);
# CHECK: vec<__nv_bfloat16, 8> s_y;
# CHECK: const float v_x = __bfloat162float(l_x.v[q]);
# CHECK: const float v_t0 = sh_bf16(v_x + v_b); // add
# CHECK-NEXT: const float v_t1 = sh_bf16(sh_gelu(v_t0)); // gelu
# CHECK-NEXT: const float v_y = sh_bf16(v_t1 * 2.0f); // mul
# CHECK-NEXT: s_y.v[q] = __float2bfloat16_rn(v_y);
