# embedding and embedding_grad: kernels of their own (not fused), the
# embedding moving elements as raw words, its gradient summing each table
# row's gradients in index order (a block takes a unit of table rows and
# columns, reads the ids in tiles, 4 a thread, and lists the tile's ids of
# its rows in shared memory in index order: each warp's count through
# shared memory, a lane's place in it by a scan of shuffles). An id
# outside the table makes its row NaN (the gradient's whole table), so the
# rest of the step stays deterministic, and is recorded in the module's
# error word sh_error (one per module, found by the runtime with
# cuModuleGetGlobal): (0xffffffff - index) << 32 | id by atomicMax, so the
# lowest bad index wins, the one the CPU backend names. A table whose rows
# are whole 16-byte words (here 16 bf16) moves a word a thread, the NaN
# row as words of two bf16 NaNs.
# RUN: %shardc %s --mesh 2 --emit cuda | FileCheck %s
# RUN: sed 's/f32\[8, 6\]/bf16[8, 16]/' %s > %t.sh
# RUN: %shardc %t.sh --mesh 2 --emit cuda | FileCheck %s --check-prefix=WORDS
# WORDS: // k{{[0-9]+}}_embedding: elementwise kernel of embedding over bf16[2, 3, 16]
# WORDS: // one thread per 16 bytes of a row of the result, grid-stride; assumes 16-byte aligned buffers
# WORDS: for (i64 e = (i64)blockIdx.x * blockDim.x + threadIdx.x; e < 12; e += stride) {
# WORDS-NEXT: const i64 i = e / 2; // the id's index (e: a 16-byte word)
# WORDS-NEXT: const int id = p1[i];
# WORDS-NEXT: const bool inside = id >= 0 && id < 8;
# WORDS-NEXT: if (!inside && e % 2 == 0)
# WORDS-NEXT: sh_bad_id(i, id); // the runtime's error; the row is NaN meanwhile
# WORDS-NEXT: reinterpret_cast<uint4 *>(p2)[e] = inside ? reinterpret_cast<const uint4 *>(p0)[(i64)id * 2 + e % 2] : make_uint4(0x7fc07fc0u, 0x7fc07fc0u, 0x7fc07fc0u, 0x7fc07fc0u);
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
# CHECK: // launch: grid (1, 1, 1), block (256, 1, 1), 8256 bytes of dynamic shared memory
# CHECK-NEXT: // a block per unit of table rows and columns, the ids read in tiles in index order and the unit's listed in shared memory, grid-stride
# CHECK-NEXT: // an id outside the table: its row NaN, and the lowest such index in sh_error
# CHECK: __device__ unsigned long long sh_error;
# CHECK: [[GRAD]](
# CHECK: for (i64 u = blockIdx.x; u < 1; u += gridDim.x) {
# CHECK-NEXT: const int r0 = (int)(u / 1) * 8; // the unit's rows r0 .. r0 + 7
# CHECK: float acc[8][1];
# CHECK: for (i64 t0 = 0; t0 < 6; t0 += 1024, par ^= 1) {
# CHECK: id[e] = i < 6 ? p0[i] : -1;
# CHECK-NEXT: if (i < 6 && (id[e] < 0 || id[e] >= 8)) {
# CHECK: sh_bad_id(i, id[e]);
# CHECK: cnt += i < 6 && (unsigned)(id[e] - r0) < 8u;
# CHECK: const int x = __shfl_up_sync(0xffffffffu, incl, o);
# CHECK: wc[par * 8 + warp] = incl + (warp_bad ? 1 << 30 : 0);
# CHECK-NEXT: __syncthreads();
# CHECK: if (total == 0)
# CHECK-NEXT: continue;
# CHECK: hix[pos] = threadIdx.x * 4 + e;
# CHECK-NEXT: hrow[pos++] = id[e] - r0;
# CHECK: __syncthreads();
# CHECK-NEXT: for (int x = 0; x < total; x++) { // in index order
# CHECK: acc[a][c] += val;
# CHECK: p2[(i64)(r0 + a) * 6 + c0 + c * 256] = (bad ? __int_as_float(0x7fc00000) : acc[a][c]);
