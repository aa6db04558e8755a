# cross_entropy: a block per row, one pass over its logits (the online
# max and sum of exp, merged over the block), thread 0 adding the row's
# loss to its block's total; the block that ends last sums the blocks'
# totals in block order (sh_last_block), so the loss does not depend on
# the order blocks run in. Its gradient, softmax minus the one-hot label
# (times autodiff's 1 / rows), is computed in the same kernel: xent_grad.c
# moves it to just after the loss (past the loss's scaling and all-reduce,
# which hold nothing), and fuse.c joins it to the loss's group, so each
# row's gradient is a second pass over the row, exp(x - lse) with lse =
# max + log(sum) from the first, and no kernel of its own reads the
# logits again; the lse is then read in the kernel alone, never stored.
# A label outside 0..C-1 makes the loss (and the gradient's row) NaN and
# is recorded in the module's error word sh_error, the lowest bad row
# winning (atomicMax of (0xffffffff - row) << 32 | label), for the runtime
# to report as the CPU backend does. Kernels that check nothing have no
# sh_error. cross-entropy-apart.sh: a gradient that stays a kernel of its own.
# RUN: %shardc %s --mesh 2 --emit cuda | FileCheck %s
# RUN: %shardc %s --mesh 2 --emit fused-ir | FileCheck %s --check-prefix=IR
mesh dp
input  x   : f32[8, 10] shard(dp, _)
input  lab : i32[8] shard(dp)
param  w   : f32[10, 10] = normal(1.0)
loss = cross_entropy(x @ w, lab)
output loss
train loss with sgd(lr = 0.1)
# IR: // kernel [[K:k[0-9]+]]_cross_entropy_cross_entropy_lse_cross_entropy_grad_mul: cross_entropy over the last axis of [4, 10] and its gradient; reads %{{[0-9a-z]+}}, %lab; stores %[[G:[0-9]+]], %[[L:[0-9]+]]
# IR-NEXT: cross_entropy
# IR-NEXT: cross_entropy_lse {{.*}}// [[K]]_{{[a-z_]+}}{{$}}
# IR-NEXT: cross_entropy_grad {{.*}} phase backward // [[K]]_
# IR-NEXT: const {{.*}} phase backward // [[K]]_
# IR-NEXT: %[[G]] = mul {{.*}} phase backward // [[K]]_{{[a-z_]+}}, stored
# IR-NEXT: const {{.*}} // [[K]]_
# IR-NEXT: %[[L]] = mul {{.*}} partial(dp) // [[K]]_{{[a-z_]+}}, stored
# IR-NEXT: %loss = all_reduce %[[L]]
# IR-NOT: cross_entropy_grad
# CHECK: // [[XENT:k[0-9]+_cross_entropy[a-z_]*]]: row kernel over f32[4, 10] (4 rows of 10)
# CHECK-NEXT: //   %{{[0-9]+}} = cross_entropy %{{[0-9]+}}, %lab
# CHECK-NEXT: //   %[[LSE:[0-9]+]] = cross_entropy_lse %{{[0-9]+}}{{$}}
# CHECK-NEXT: //   %{{[0-9]+}} = cross_entropy_grad %{{[0-9]+}}, %lab, %[[LSE]]
# CHECK: __device__ unsigned long long sh_error;
# CHECK-NEXT: __device__ __forceinline__ void sh_bad_id(i64 index, int id)
# CHECK: [[XENT]](
# CHECK: const int lab = p_lab[row];
# CHECK: sh_online(m, s, xin);
# CHECK: sh_block_online(m, s, red);
# CHECK-NEXT: if (threadIdx.x == 0) {
# CHECK-NEXT: const bool valid = lab >= 0 && lab < 10;
# CHECK-NEXT: if (!valid)
# CHECK-NEXT: sh_bad_id(row, lab); // the runtime's error; the loss is NaN meanwhile
# CHECK: total += valid ? m + logf(s) - picked : SH_NAN;
# CHECK: { // the row's gradient, a second pass
# CHECK-NEXT: const float lse = m + logf(s);
# CHECK-NOT: sh_online
# CHECK: sh_xent_grad(xin, lse, 1.0f, c, lab, 10)
# CHECK-NEXT: * 0.125f; // mul
# CHECK: if (threadIdx.x == 0 && sh_last_block(total)) {
# CHECK-NEXT: const float acc = sh_parts_sum();
# CHECK: acc / 4.0f; // cross_entropy
# CHECK-NOT: p_t[[LSE]]
# CHECK: // k{{[0-9]+}}_sgd: elementwise kernel
# CHECK-NOT: sh_error
# CHECK: {{^}}k{{[0-9]+}}_sgd(
