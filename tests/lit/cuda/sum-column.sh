# a sum over a middle axis: of 200 elements a block per 32 results (a lane
# each) and run of the axis: 8 groups of 32 results are far fewer blocks
# than a GPU has processors, so the 200 are cut into 3 runs of 67 (at
# least 64 each), a block each (8 warps, each taking every 8th row of the
# run); the warps' partial sums combined in warp order by warp 0, which
# stores them, and the group's last block to finish sums the 3 runs'
# parts in run order. Of 100 elements (one run) a block per 32 results
# over the whole axis; of 4 elements a thread per result. 37 columns: the
# second group's last lanes hold no column.
# RUN: %shardc %s --emit cuda | FileCheck %s
mesh a
input r : f32[4, 200, 37]
input u : f32[100, 37]
s = sum(r * 2.0, axis = 1)
m = mean(r, axis = 0)
z = sum(u, axis = 0)
output s, m, z
# CHECK: // k0_mul_sum: column kernel over f32[4, 200, 37] (148 rows of 200, strided)
# CHECK: // launch: grid (24, 1, 1), block (256, 1, 1), 1024 bytes of dynamic shared memory
# CHECK-NEXT: // a block per 32 results and run of the reduced axis, a lane each, its warps splitting the run; the last block of the 32 sums the runs' parts
# CHECK: __device__ float sh_cpart[256 * 32];
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
# CHECK-NEXT: // a block per 32 results, a lane each, its warps splitting the reduced axis
# CHECK-NOT: sh_cpart
# CHECK: for (i64 gi = blockIdx.x; gi < 2; gi += gridDim.x) {
# CHECK-NEXT: const i64 r0 = 0, r1 = 100;
# CHECK: for (i64 k = r0 + w; live && k < r1; k += 8) {
# CHECK: if (w == 0 && live) {
# CHECK-NEXT: for (int j = 1; j < 8; j++) // the warps' partial results, in warp order
# CHECK-NEXT: acc += red[j * 32 + lane];
# CHECK-NEXT: const i64 e = o * 37 + c; // the result's element
