# A layernorm's input gradient with its gain's and bias's partial sums in
# one row kernel (passes/norm_cols.c, fuse.c's join_norm_cols,
# codegen/cuda_strategy.c's norm_col_*): the small GPT's MLP layernorm,
# 128 rows of 32 on one GPU in 8 runs of 16. The kernel takes 8 blocks,
# each walking its run (a warp every 8th row); after each row's input
# gradient (its residual's add in the epilogue) each lane adds its
# columns of dy and of dy * (x - mean) * rstd to its registers; then the
# block adds its warps' sums in warp order in shared memory and stores
# its partial row of each. The sums of the 8 partial rows are column
# kernels of their own. rmsnorm's (llama.sh) takes its gain's sum alone.
# RUN: %shardc %S/../../../examples/transformer.sh -D B=4 -D S=32 -D D=32 -D NH=2 -D V=64 -D L=1 --mesh 1x1 --emit fused-ir | FileCheck %s --check-prefix=GROUP
# RUN: %shardc %S/../../../examples/transformer.sh -D B=4 -D S=32 -D D=32 -D NH=2 -D V=64 -D L=1 --mesh 1x1 --emit cuda | FileCheck %s
# RUN: %shardc %S/../../../examples/llama.sh -D L=1 --mesh 1x1 --emit fused-ir | FileCheck %s --check-prefix=RMS
# GROUP: // kernel [[K:k[0-9]+]]_layernorm_dx_add_sum_sub: layernorm_dx over the last axis of [4, 32, 32] with two column sums over runs of its rows; reads %[[DY:[0-9]+]], %layers.0.x, %{{[0-9]+}}, %{{[0-9]+}}, %layers.0.mlp.ln_g, %{{[0-9]+}}, %{{.*}}; stores %[[DX:[0-9]+]], %[[BP:[0-9]+]], %[[GP:[0-9]+]]
# GROUP: %[[BP]] = sum %{{[0-9]+}} {axis = 1, keepdims = false} : f32[8, 32] auto(dp, _) phase backward  // [[K]]_layernorm_dx_add_sum_sub, stored
# GROUP: %[[GP]] = sum %{{[0-9]+}} {axis = 1, keepdims = false} : f32[8, 32] auto(dp, _) phase backward  // [[K]]_layernorm_dx_add_sum_sub, stored
# GROUP-NEXT: // kernel k{{[0-9]+}}_sum: sum over axis 0 of [8, 32]; reads %[[GP]]
# GROUP: // kernel k{{[0-9]+}}_sum: sum over axis 0 of [8, 32]; reads %[[BP]]
# CHECK: // [[K:k[0-9]+]]_layernorm_dx_add_sum_sub: row kernel over f32[4, 32, 32] (128 rows of 32)
# CHECK: // launch: grid (8, 1, 1), block (256, 1, 1), 256 bytes of dynamic shared memory
# CHECK-NEXT: // a warp per row, each block a run of rows whose column sums it stores as a partial row; 4 elements per load
# CHECK: extern "C" __global__ void __launch_bounds__(256, 2)
# CHECK-NEXT: [[K]]_layernorm_dx_add_sum_sub(
# CHECK: float c0[4] = {}; // the lane's columns of t[[B:[0-9]+]]'s partial row
# CHECK-NEXT: float c1[4] = {}; // the lane's columns of t[[G:[0-9]+]]'s partial row
# CHECK-NEXT: for (i64 row = (i64)blockIdx.x * 16 + threadIdx.x / 32; row < (i64)blockIdx.x * 16 + 16; row += 8) { // the block's run of rows
# CHECK-NOT: float xs[
# CHECK: layernorm_dx
# CHECK: for (int j = 0; j < 1; j++) { // the column sums' elements of this row
# CHECK: { // t[[B]]'s partial sum
# CHECK-NEXT: float *const acc = c0 + j * 4;
# CHECK: acc[q] += xin;
# CHECK: { // t[[G]]'s partial sum
# CHECK-NEXT: float *const acc = c1 + j * 4;
# CHECK: = v_t{{[0-9]+}} - v_t{{[0-9]+}}; // sub
# CHECK: acc[q] += xin;
# CHECK: extern __shared__ float cs[]; // [2][32]: the block's column sums
# CHECK-NEXT: for (int w = 0; w < 8; w++) { // the warps' sums, in warp order
# CHECK: cs[0 + c] = (w == 0 ? 0.0f : cs[0 + c]) + c0[j * 4 + q];
# CHECK-NEXT: cs[32 + c] = (w == 0 ? 0.0f : cs[32 + c]) + c1[j * 4 + q];
# CHECK: __syncthreads();
# CHECK: for (i64 c = threadIdx.x; c < 32; c += blockDim.x) { // the partial rows
# CHECK-NEXT: const i64 e = (i64)blockIdx.x * 32 + c;
# CHECK: p_t[[B]][e] = v_t[[B]];
# CHECK: p_t[[G]][e] = v_t[[G]];
# RMS: // kernel k{{[0-9]+}}_rmsnorm_dx_add_mul_sum: rmsnorm_dx over the last axis of [8, 128, 256] with a column sum over runs of its rows
