# softmax over the last axis, fused with its producer. A row of at most
# 1024 elements is a warp's (8 rows a block, grid-stride over the rows;
# each reduction by shuffles alone, every lane the same bits), a longer
# one a block's (reductions by warp shuffles then shared memory across the
# warps, whose size the launch line gives: one float per warp). 4-element
# vectors; the row stays in registers between its three passes (max, sum
# of exp, result) when it fits. 1000 is not a multiple of 32 * 4, nor
# 3000 of 1024 * 4, so the last vectors are guarded. A row that does not
# fit (40000 elements, 40 a thread) is read twice, not three times: the
# max and the sum of exp(x - max) in one pass (online: a vector's 4
# elements at once, sh_online_vec, their max first and their exps
# independent of one another), merged over the block with two floats a
# warp (sh_block_online), then the results.
# RUN: %shardc %s --mesh 2 --emit cuda | FileCheck %s
mesh dp
input x : f32[8, 1000] shard(dp, _)
input y : f32[8, 3000] shard(dp, _)
input z : f32[2, 40000]
p = softmax(x * 2, axis = -1)
q = softmax(y, axis = -1)
r = softmax(z, axis = -1)
output p, q, r
# CHECK: // k0_mul_softmax: row kernel over f32[4, 1000] (4 rows of 1000)
# CHECK-NEXT: //   %0 = const 2.0f
# CHECK-NEXT: //   %1 = mul %x, %0
# CHECK-NEXT: //   %p = softmax %1 {axis = 1}  (stored)
# CHECK-NEXT: // launch: grid (1, 1, 1), block (256, 1, 1), 0 bytes of dynamic shared memory
# CHECK-NEXT: // a warp per row, 8 rows a block, grid-stride over rows; 4 elements per load
# CHECK: v += __shfl_xor_sync(0xffffffffu, v, o);
# CHECK: v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
# CHECK-NOT: sh_block_sum
# CHECK: extern "C" __global__ void __launch_bounds__(256)
# CHECK-NEXT: k0_mul_softmax(
# CHECK: const int lane = threadIdx.x % 32; // a warp per row
# CHECK-NEXT: for (i64 row = (i64)blockIdx.x * 8 + threadIdx.x / 32; row < 4; row += (i64)gridDim.x * 8) {
# CHECK-NEXT: float xs[32]; // this thread's elements of the row
# CHECK-NEXT: float acc = __int_as_float(0xff800000) /* -inf */;
# CHECK: const i64 c = ((i64)j * 32 + lane) * 4;
# CHECK-NEXT: if (c < 1000) {
# CHECK-NEXT: const i64 e = row * 1000 + c;
# CHECK: const float v_t1 = v_x * 2.0f; // mul
# CHECK-NEXT: const float xin = v_t1;
# CHECK-NEXT: xs[j * 4 + q] = xin; acc = fmaxf(acc, xin);
# CHECK: const float mx = sh_warp_max(acc);
# CHECK: acc2 += expf(xin - mx);
# CHECK: const float scale = 1.0f / sh_warp_sum(acc2);
# CHECK: const float v_p = expf(xin - mx) * scale; // softmax
# CHECK: *reinterpret_cast<vec<float, 4> *>(p_p + e) = s_p;
# CHECK: // k1_softmax: row kernel over f32[4, 3000] (4 rows of 3000)
# CHECK: // launch: grid (4, 1, 1), block (1024, 1, 1), 128 bytes of dynamic shared memory
# CHECK-NEXT: // one block per row, grid-stride over rows; 4 elements per load
# CHECK: __device__ __forceinline__ float sh_block_sum(float v, float *red)
# CHECK: red[threadIdx.x / 32] = v;
# CHECK: extern __shared__ float red[]; // one float per warp
# CHECK-NEXT: for (i64 row = blockIdx.x; row < 4; row += gridDim.x) {
# CHECK-NEXT: float xs[4]; // this thread's elements of the row
# CHECK: const i64 c = ((i64)j * 1024 + threadIdx.x) * 4;
# CHECK-NEXT: if (c < 3000) {
# CHECK: const float mx = sh_block_max(acc, red);
# CHECK: const float scale = 1.0f / sh_block_sum(acc2, red);
# CHECK: // k2_softmax: row kernel over f32[2, 40000] (2 rows of 40000)
# CHECK: // launch: grid (2, 1, 1), block (1024, 1, 1), 256 bytes of dynamic shared memory
# CHECK: __device__ __forceinline__ void sh_block_online(float &m, float &s, float *red)
# CHECK: extern __shared__ float red[]; // two floats per warp
# CHECK-NOT: float xs[
# CHECK: float xv[4]; // the vector's elements
# CHECK: xv[q] = xin;
# CHECK: sh_online_vec(acc, acc2, xv);
# CHECK: sh_block_online(acc, acc2, red); const float mx = acc, scale = 1.0f / acc2;
# CHECK: const float v_r = expf(xin - mx) * scale; // softmax
