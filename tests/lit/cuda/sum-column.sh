# a sum over a middle axis: of 200 elements a block per 32 results (a lane
# each; 16 warps, each taking every 16th element of the axis), the warps'
# partial sums combined in warp order by warp 0; of 4 elements a thread per
# result. 37 columns: the second group's last lanes
# hold no column.
# RUN: %shardc %s --emit cuda | FileCheck %s
mesh a
input r : f32[4, 200, 37]
s = sum(r * 2.0, axis = 1)
m = mean(r, axis = 0)
output s, m
# CHECK: // k0_mul_sum: column kernel over f32[4, 200, 37] (148 rows of 200, strided)
# CHECK: // launch: grid (8, 1, 1), block (512, 1, 1), 2048 bytes of dynamic shared memory
# CHECK-NEXT: // a block per 32 results, a lane each, its warps splitting the reduced axis
# CHECK: extern __shared__ float red[]; // [warps][32]: each warp's partial results
# CHECK-NEXT: const int lane = threadIdx.x % 32, w = threadIdx.x / 32;
# CHECK-NEXT: for (i64 gi = blockIdx.x; gi < 8; gi += gridDim.x) {
# CHECK-NEXT: const i64 o = gi / 2, c = gi % 2 * 32 + lane; // outer index, column
# CHECK-NEXT: const bool live = c < 37;
# CHECK-NEXT: const i64 base = o * 7400 + c; // element (o, 0, c)
# CHECK: for (i64 k = w; live && k < 200; k += 16) {
# CHECK-NEXT: const i64 e = base + k * 37;
# CHECK: red[threadIdx.x] = acc;
# CHECK: for (int j = 1; j < 16; j++) // the warps' partial results, in warp order
# CHECK-NEXT: acc += red[j * 32 + lane];
# CHECK-NEXT: const i64 e = o * 37 + c; // the result's element
# CHECK: // k1_mean: column kernel over f32[4, 200, 37] (7400 rows of 4, strided)
# CHECK: // one thread per result, looping over the reduced axis
