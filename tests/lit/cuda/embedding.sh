# embedding and embedding_grad: kernels of their own (not fused), the
# embedding moving elements as raw words, its gradient summing each table
# row's gradients in index order (a warp finds its row's ids by ballot). An id outside the table makes its row NaN, so the
# rest of the step stays deterministic, and is recorded in the module's
# error word sh_error (one per module, found by the runtime with
# cuModuleGetGlobal): (0xffffffff - index) << 32 | id by atomicMax, so the
# lowest bad index wins, the one the CPU backend names.
# RUN: %shardc %s --mesh 2 --emit cuda | FileCheck %s
mesh dp
input  ids : i32[4, 3] shard(dp, _)
input  lab : i32[4, 3] shard(dp, _)
param  t   : f32[8, 6] = normal(1.0)
loss = cross_entropy(embedding(t, ids), lab)
output loss
train loss with sgd(lr = 0.1)
# CHECK: // [[EMB:k[0-9]+_embedding]]: elementwise kernel of embedding over f32[2, 3, 6]
# CHECK-NEXT: //   %0 = embedding %t, %ids
# CHECK: // one thread per element of the result, grid-stride
# CHECK-NEXT: // an id outside the table: its row NaN, and the lowest such index in sh_error
# CHECK: __device__ unsigned long long sh_error;
# CHECK-NEXT: __device__ __forceinline__ void sh_bad_id(i64 index, int id)
# CHECK-NEXT: {
# CHECK-NEXT: atomicMax(&sh_error, (unsigned long long)(0xffffffffu - (unsigned int)index) << 32 |
# CHECK-NEXT: (unsigned int)id);
# CHECK-NEXT: }
# CHECK: [[EMB]](
# CHECK: for (i64 e = (i64)blockIdx.x * blockDim.x + threadIdx.x; e < 36; e += stride) {
# CHECK-NEXT: const i64 i = e / 6; // the id's index
# CHECK-NEXT: const int id = p1[i];
# CHECK-NEXT: const bool inside = id >= 0 && id < 8;
# CHECK-NEXT: if (!inside && e % 6 == 0)
# CHECK-NEXT: sh_bad_id(i, id); // the runtime's error; the row is NaN meanwhile
# CHECK-NEXT: p2[e] = inside ? p0[(i64)id * 6 + e % 6] : 0x7fc00000u;
# CHECK: // [[GRAD:k[0-9]+_embedding_grad]]: row kernel of embedding_grad over f32[8, 6]
# CHECK: // a warp per table row and column chunk, its ids found by ballot, grid-stride
# CHECK-NEXT: // an id outside the table: its row NaN, and the lowest such index in sh_error
# CHECK: __device__ unsigned long long sh_error;
# CHECK: [[GRAD]](
# CHECK: const int id = b + lane < len ? ids[b + lane] : 0;
# CHECK-NEXT: if (__any_sync(0xffffffffu, id < 0 || id >= 8)) {
# CHECK-NEXT: bad = true;
# CHECK-NEXT: if (blk == 0 && warp == 0 && (id < 0 || id >= 8))
# CHECK-NEXT: sh_bad_id(t0 + b + lane, id);
# CHECK: unsigned hit = __ballot_sync(0xffffffffu, id == row[a] && b + lane < len);
# CHECK: acc[a][c] += g[c0 + c * 32];
# CHECK: p2[(i64)row[a] * 6 + c0 + c * 32] = (bad ? __int_as_float(0x7fc00000) : acc[a][c]);
