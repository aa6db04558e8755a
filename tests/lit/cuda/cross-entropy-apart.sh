# A cross_entropy's gradient that stays a kernel of its own: the loss adds
# mean(y * y), whose gradient autodiff makes between the loss and the
# cross_entropy's gradient, a value of y's shape (xent_grad.c moves the
# gradient only over ops of scalars), so the gradient, a row kernel,
# reads the forward's log-sum-exp, which the loss's kernel then stores
# (its thread 0 once the row's max and sum are known): softmax minus the
# one-hot label from exp(x - lse), one pass over the row.
# RUN: %shardc %s --mesh 2 --emit cuda | FileCheck %s
mesh dp
input  x   : f32[8, 10] shard(dp, _)
input  lab : i32[8] shard(dp)
param  w   : f32[10, 10] = normal(1.0)
y = x @ w
loss = cross_entropy(y, lab) + mean(y * y)
output loss
train loss with sgd(lr = 0.1)
# CHECK: // [[XENT:k[0-9]+_cross_entropy[a-z_]*]]: row kernel over f32[4, 10] (4 rows of 10)
# CHECK-NEXT: //   %{{[0-9]+}} = cross_entropy %y, %lab
# CHECK-NEXT: //   %[[LSE:[0-9]+]] = cross_entropy_lse %y  (stored)
# CHECK: [[XENT]](
# CHECK: sh_block_online(m, s, red);
# CHECK-NEXT: if (threadIdx.x == 0) p_t[[LSE]][row] = m + logf(s); // cross_entropy_lse
# CHECK-NOT: sh_xent_grad(
# CHECK: // [[GRAD:k[0-9]+_cross_entropy_grad[a-z_]*]]: row kernel over f32[4, 10] (4 rows of 10)
# CHECK: [[GRAD]](
# CHECK: const int lab = p_lab[row];
# CHECK-NEXT: if ((lab < 0 || lab >= 10) && lane == 0)
# CHECK-NEXT: sh_bad_id(row, lab); // the runtime's error; the row is NaN meanwhile
# CHECK-NEXT: const float lse = p_t[[LSE]][row]; // cross_entropy_lse, kept from the forward
# CHECK-NOT: sh_online
# CHECK: sh_xent_grad(xin, lse, 1.0f, c, lab, 10)
