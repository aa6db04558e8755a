# cross_entropy: a block per row, one pass over its logits (the online
# max and sum of exp, merged over the block), thread 0 adding the row's
# loss to its block's total; the block that ends last sums the blocks'
# totals in block order (sh_last_block), so the loss does not depend on
# the order blocks run in; the same kernel stores each row's log-sum-exp
# (cross_entropy_lse, its thread 0 once the max and sum are known);
# cross_entropy_grad: a row kernel, softmax minus the one-hot label, the
# softmax exp(x - lse) from that lse, kept from the forward. A
# label outside 0..C-1 makes the loss (the gradient's row) NaN and is
# recorded in the module's error word sh_error, the lowest bad row winning
# (atomicMax of (0xffffffff - row) << 32 | label), for the runtime to
# report as the CPU backend does. Kernels that check nothing have no
# sh_error.
# RUN: %shardc %s --mesh 2 --emit cuda | FileCheck %s
mesh dp
input  x   : f32[8, 10] shard(dp, _)
input  lab : i32[8] shard(dp)
param  w   : f32[10, 10] = normal(1.0)
loss = cross_entropy(x @ w, lab)
output loss
train loss with sgd(lr = 0.1)
# CHECK: // [[XENT:k[0-9]+_cross_entropy[a-z_]*]]: row kernel over f32[4, 10] (4 rows of 10)
# CHECK-NEXT: //   %{{[0-9]+}} = cross_entropy %{{[0-9]+}}, %lab
# CHECK-NEXT: //   %[[LSE:[0-9]+]] = cross_entropy_lse %{{[0-9]+}}  (stored)
# CHECK: __device__ unsigned long long sh_error;
# CHECK-NEXT: __device__ __forceinline__ void sh_bad_id(i64 index, int id)
# CHECK: [[XENT]](
# CHECK: const int lab = p_lab[row];
# CHECK: sh_online(m, s, xin);
# CHECK: sh_block_online(m, s, red);
# CHECK-NEXT: if (threadIdx.x == 0) p_t[[LSE]][row] = m + logf(s); // cross_entropy_lse
# CHECK-NEXT: if (threadIdx.x == 0) {
# CHECK-NEXT: const bool valid = lab >= 0 && lab < 10;
# CHECK-NEXT: if (!valid)
# CHECK-NEXT: sh_bad_id(row, lab); // the runtime's error; the loss is NaN meanwhile
# CHECK: total += valid ? m + logf(s) - picked : SH_NAN;
# CHECK: if (threadIdx.x == 0 && sh_last_block(total)) {
# CHECK-NEXT: const float acc = sh_parts_sum();
# CHECK: acc / 4.0f; // cross_entropy
# CHECK: // [[GRAD:k[0-9]+_cross_entropy_grad[a-z_]*]]: row kernel over f32[4, 10] (4 rows of 10)
# CHECK: __device__ unsigned long long sh_error;
# CHECK: [[GRAD]](
# CHECK: const int lab = p_lab[row];
# CHECK-NEXT: if ((lab < 0 || lab >= 10) && lane == 0)
# CHECK-NEXT: sh_bad_id(row, lab); // the runtime's error; the row is NaN meanwhile
# CHECK-NEXT: const float lse = p_t[[LSE]][row]; // cross_entropy_lse, kept from the forward
# CHECK-NOT: sh_online
# CHECK: sh_xent_grad(xin, lse, 1.0f, c, lab, 10)
# CHECK: // k{{[0-9]+}}_sgd: elementwise kernel
# CHECK-NOT: sh_error
# CHECK: {{^}}k{{[0-9]+}}_sgd(
