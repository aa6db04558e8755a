# An elementwise chain in f32 is one kernel named after its ops: one thread
# per 4 elements (vector loads of 16 bytes), grid-stride; the bias of
# shape [64] broadcasts by `e % 64`; the constant 2 is the kernel's literal
# (2.0f: no pointer, no fill of its buffer on the GPU); only the value the
# program outputs is stored. gelu is the tanh approximation.
# RUN: %shardc %s --mesh 2 --emit cuda | FileCheck %s
mesh dp
input  x : f32[8, 64] shard(dp, _)
param  b : f32[64] = zeros
y = gelu(x + b) * 2
output y
# CHECK: // shardc: 1 CUDA kernel for sm_80, sm_90; PTX for sm_90
# CHECK: // k0_add_gelu_mul: elementwise kernel over f32[4, 64]
# CHECK-NEXT: //   %0 = add %x, %b
# CHECK-NEXT: //   %1 = gelu %0
# CHECK-NEXT: //   %2 = const 2.0f
# CHECK-NEXT: //   %y = mul %1, %2  (stored)
# CHECK-NEXT: // launch: grid (1, 1, 1), block (64, 1, 1), 0 bytes of dynamic shared memory
# CHECK-NEXT: // one thread per 4 elements, grid-stride; assumes 16-byte aligned buffers
# CHECK-NOT: #include
# CHECK: return 0.5f * v * (1.0f + tanhf(c * (v + 0.044715f * v * v * v)));
# CHECK: extern "C" __global__ void __launch_bounds__(64)
# CHECK-NEXT: k0_add_gelu_mul(
# CHECK-NEXT: const float *__restrict__ p_x,
# CHECK-NEXT: const float *__restrict__ p_b,
# CHECK-NEXT: float *__restrict__ p_y)
# CHECK: for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < 64; i += stride) {
# CHECK-NEXT: const i64 e = i * 4;
# CHECK-NEXT: const vec<float, 4> l_x = *reinterpret_cast<const vec<float, 4> *>(p_x + e);
# CHECK-NEXT: const vec<float, 4> l_b = *reinterpret_cast<const vec<float, 4> *>(p_b + e % 64);
# CHECK: const float v_t0 = v_x + v_b; // add
# CHECK-NEXT: const float v_t1 = sh_gelu(v_t0); // gelu
# CHECK-NEXT: const float v_y = v_t1 * 2.0f; // mul
# CHECK-NEXT: s_y.v[q] = v_y;
# CHECK: *reinterpret_cast<vec<float, 4> *>(p_y + e) = s_y;
