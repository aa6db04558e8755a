# a sum over a middle axis: of 200 elements a block per 32 results (a lane
# each) and run of the axis: 8 groups of 32 results are far fewer blocks
# than a GPU has processors, so the 200 are cut into 3 runs of 67 (at
# least 64 each), a block each (8 warps, each taking every 8th row of the
# run); the warps' partial sums combined in warp order by warp 0, which
# stores them, and the group's last block to finish sums the 3 runs'
# parts in run order. Of 100 elements (one run) a block per 32 results
# over the whole axis; of 4 elements a thread per result. 37 columns: the
# second group's last lanes hold no column. 40 columns of bf16: 8
# columns a lane (16-byte loads), 5 lanes of a group of 256 columns; over
# 1024 rows 16 runs of 64, a block each (4 warps); the parts [block][lane]
# [8], and the group's last block sums them with all its warps, warp w
# the runs w, w + 4, ..., then the warps' sums in warp order. Over 4 rows
# of 40, a thread per 8 results.
# RUN: %shardc %s --emit cuda | FileCheck %s
mesh a
input r : f32[4, 200, 37]
input u : f32[100, 37]
input h : bf16[1024, 40]
input h3 : bf16[4, 40]
s = sum(r * 2.0, axis = 1)
m = mean(r, axis = 0)
z = sum(u, axis = 0)
hs = sum(h, axis = 0)
h3s = sum(h3, axis = 0)
output s, m, z, hs, h3s
# CHECK: // k0_mul_sum: column kernel over f32[4, 200, 37] (148 rows of 200, strided)
# CHECK: // launch: grid (24, 1, 1), block (256, 1, 1), 1024 bytes of dynamic shared memory
# CHECK-NEXT: // a block per 32 lanes' results and run of the reduced axis, its warps splitting the run; the last block of the group sums the runs' parts
# CHECK: __device__ float sh_cpart[256 * 32 * 8];
# CHECK-NEXT: __device__ unsigned int sh_cdone[256];
# CHECK: extern __shared__ float red[]; // [warps][32]: each warp's partial results
# CHECK-NEXT: const int lane = threadIdx.x % 32, w = threadIdx.x / 32;
# CHECK-NEXT: { // a block a run of 67 rows of a group of 32 columns: 3 runs
# CHECK-NEXT: const i64 gi = blockIdx.x / 3, r0 = blockIdx.x % 3 * 67; // group, first row
# CHECK-NEXT: const i64 r1 = min(r0 + 67, (i64)200);
# CHECK-NEXT: const i64 o = gi / 2, c = gi % 2 * 32 + lane; // outer index, column
# CHECK-NEXT: const bool live = c < 37;
# CHECK-NEXT: const i64 base = o * 7400 + c; // element (o, 0, c)
# CHECK: for (i64 k = r0 + w; live && k < r1; k += 8) {
# CHECK-NEXT: const i64 e = base + k * 37;
# CHECK: red[threadIdx.x] = acc;
# CHECK: for (int j = 1; j < 8; j++) // the warps' partial results, in warp order
# CHECK-NEXT: acc += red[j * 32 + lane];
# CHECK-NEXT: sh_cpart[blockIdx.x * 32 + lane] = acc;
# CHECK-NEXT: __threadfence(); // each lane's part is seen before the count grows
# CHECK-NEXT: __syncwarp();
# CHECK: before = atomicAdd(&sh_cdone[gi], 1u);
# CHECK: if (before + 1 == 3) { // the group's last block
# CHECK-NEXT: __threadfence();
# CHECK-NEXT: acc = ((volatile float *)sh_cpart)[gi * 96 + lane];
# CHECK-NEXT: for (int j = 1; j < 3; j++) // the runs' partial results, in run order
# CHECK-NEXT: acc += ((volatile float *)sh_cpart)[(gi * 3 + j) * 32 + lane];
# CHECK-NEXT: if (lane == 0)
# CHECK-NEXT: sh_cdone[gi] = 0;
# CHECK-NEXT: if (live) {
# CHECK-NEXT: const i64 e = o * 37 + c; // the result's element
# CHECK: // k1_mean: column kernel over f32[4, 200, 37] (7400 rows of 4, strided)
# CHECK: // one thread per result, looping over the reduced axis
# CHECK: // k2_sum: column kernel over f32[100, 37] (37 rows of 100, strided)
# CHECK: // launch: grid (2, 1, 1), block (256, 1, 1), 1024 bytes of dynamic shared memory
# CHECK-NEXT: // a block per 32 lanes' results, its warps splitting the reduced axis
# CHECK-NOT: sh_cpart
# CHECK: for (i64 gi = blockIdx.x; gi < 2; gi += gridDim.x) {
# CHECK-NEXT: const i64 r0 = 0, r1 = 100;
# CHECK: for (i64 k = r0 + w; live && k < r1; k += 8) {
# CHECK: if (w == 0 && live) {
# CHECK-NEXT: for (int j = 1; j < 8; j++) // the warps' partial results, in warp order
# CHECK-NEXT: acc += red[j * 32 + lane];
# CHECK-NEXT: const i64 e = o * 37 + c; // the result's element
# CHECK: // k3_sum: column kernel over bf16[1024, 40] (40 rows of 1024, strided)
# CHECK: // launch: grid (16, 1, 1), block (128, 1, 1), 4096 bytes of dynamic shared memory
# CHECK-NEXT: // a block per 32 lanes' results and run of the reduced axis, its warps splitting the run; the last block of the group sums the runs' parts; 8 columns a lane
# CHECK: extern __shared__ float red[]; // [warps][8][32]: each warp's partial results
# CHECK: { // a block a run of 64 rows of a group of 256 columns: 16 runs
# CHECK: const i64 o = gi / 1, c = gi % 1 * 256 + lane * 8; // outer index, first column
# CHECK-NEXT: const bool live = c < 40;
# CHECK: float acc[8]; // the lane's columns' partial results
# CHECK: #pragma unroll 4 // loads of the next rows in flight
# CHECK-NEXT: for (i64 k = r0 + w; live && k < r1; k += 4) {
# CHECK-NEXT: const i64 e = base + k * 40;
# CHECK-NEXT: const vec<__nv_bfloat16, 8> l_h = *reinterpret_cast<const vec<__nv_bfloat16, 8> *>(p_h + e);
# CHECK: red[(w * 8 + q) * 32 + lane] = acc[q];
# CHECK: sh_cpart[(blockIdx.x * 32 + lane) * 8 + q] = acc[q];
# CHECK: last = atomicAdd(&sh_cdone[gi], 1u) + 1 == 16;
# CHECK: if (last) { // the group's last block: the runs' parts
# CHECK: for (i64 j = w; j < 16; j += 4) { // warp w's runs, in run order
# CHECK-NEXT: const volatile float *part = sh_cpart + ((gi * 16 + j) * 32 + lane) * 8;
# CHECK: for (int j = 1; j < 4; j++) { // the warps' sums, in warp order
# CHECK: *reinterpret_cast<vec<__nv_bfloat16, 8> *>(p_hs + e) = s_hs;
# CHECK: // k4_sum: column kernel over bf16[4, 40] (40 rows of 4, strided)
# CHECK: // one thread per 8 results, looping over the reduced axis
# CHECK: for (i64 t = (i64)blockIdx.x * blockDim.x + threadIdx.x; t < 5; t += stride) {
# CHECK-NEXT: const i64 r = t * 8; // the first of the thread's results
