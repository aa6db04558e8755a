# The training step of a Megatron MLP on dp x tp: the backward mirrors the
# forward (dh = dy @ w2T stays split over tp with no collective; relu's
# gradient masks by x @ w1 > 0), each gradient takes its param's sharding,
# and sgd with momentum keeps a momentum state per param, laid out like it.
# RUN: %shardc %s --mesh 2x2 --emit train-ir | FileCheck %s
# RUN: %shardc %s --mesh 2x2 --stop-after=autodiff | FileCheck %s --check-prefix=AD
# RUN: %shardc %s --mesh 2x2 --bucket-mb 0 --emit sharded-ir | FileCheck %s --check-prefix=PART
# (--bucket-mb 0: one collective per gradient; buckets.sh groups them.)
mesh dp, tp
input  x  : f32[8, 16] shard(dp, _)
input  y  : f32[8, 16] shard(dp, _)
param  w1 : f32[16, 32] shard(_, tp) = normal(0.02)
param  w2 : f32[32, 16] shard(tp, _) = normal(0.02)
loss = mse(relu(x @ w1) @ w2, y)
train loss with sgd(lr = 0.1, momentum = 0.9)
# Autodiff starts the loss's gradient from 1 times mse's 2 / N (N = 128);
# simplify folds the two constants into one.
# AD: {{^}}%3 = const {value = 1.0} : f32[] phase backward{{$}}
# AD-NEXT: {{^}}%4 = const {value = 0.015625} : f32[] phase backward{{$}}
# AD-NEXT: {{^}}%5 = mul %3, %4 : f32[] phase backward{{$}}
# CHECK: {{^}}%0 = matmul %x, %w1 : f32[8, 32] auto(dp, tp){{$}}
# CHECK-NEXT: {{^}}%1 = relu %0 : f32[8, 32] auto(dp, tp){{$}}
# CHECK-NEXT: {{^}}%2 = matmul %1, %w2 : f32[8, 16] auto(dp, _){{$}}
# CHECK-NEXT: {{^}}%loss = mse %2, %y : f32[] auto(){{$}}
# CHECK-NEXT: {{^}}%3 = const {value = 0.015625} : f32[] auto() phase backward{{$}}
# CHECK-NEXT: {{^}}%4 = sub %2, %y : f32[8, 16] auto(dp, _) phase backward{{$}}
# CHECK-NEXT: {{^}}%5 = mul %4, %3 : f32[8, 16] auto(dp, _) phase backward{{$}}
# CHECK-NEXT: {{^}}%6 = transpose %w2 {perm = [1, 0]} : f32[16, 32] auto(_, tp) phase backward{{$}}
# CHECK-NEXT: {{^}}%7 = matmul %5, %6 : f32[8, 32] auto(dp, tp) phase backward{{$}}
# CHECK-NEXT: {{^}}%8 = transpose %1 {perm = [1, 0]} : f32[32, 8] auto(tp, dp) phase backward{{$}}
# CHECK-NEXT: {{^}}%9 = matmul %8, %5 : f32[32, 16] auto(tp, _) phase backward{{$}}
# CHECK-NEXT: {{^}}%10 = const {value = 0.0} : f32[] auto() phase backward{{$}}
# CHECK-NEXT: {{^}}%11 = gt %0, %10 : f32[8, 32] auto(dp, tp) phase backward{{$}}
# CHECK-NEXT: {{^}}%12 = mul %7, %11 : f32[8, 32] auto(dp, tp) phase backward{{$}}
# CHECK-NEXT: {{^}}%13 = transpose %x {perm = [1, 0]} : f32[16, 8] auto(_, dp) phase backward{{$}}
# CHECK-NEXT: {{^}}%14 = matmul %13, %12 : f32[16, 32] auto(_, tp) phase backward{{$}}
# CHECK-NEXT: {{^}}%15 = state {name = "opt.w1.momentum", init = zeros} : f32[16, 32] auto(_, tp) phase optimizer{{$}}
# CHECK-NEXT: {{^}}%16 = momentum %15, %14, %w1 {momentum = 0.9, wd = 0.0} : f32[16, 32] auto(_, tp) phase optimizer{{$}}
# CHECK-NEXT: {{^}}%17 = sgd %w1, %16 {lr = 0.1, wd = 0.0} : f32[16, 32] auto(_, tp) phase optimizer{{$}}
# CHECK-NEXT: {{^}}%18 = state {name = "opt.w2.momentum", init = zeros} : f32[32, 16] auto(tp, _) phase optimizer{{$}}
# CHECK-NEXT: {{^}}%19 = momentum %18, %9, %w2 {momentum = 0.9, wd = 0.0} : f32[32, 16] auto(tp, _) phase optimizer{{$}}
# CHECK-NEXT: {{^}}%20 = sgd %w2, %19 {lr = 0.1, wd = 0.0} : f32[32, 16] auto(tp, _) phase optimizer{{$}}
# CHECK-NEXT: {{^}}update %15 = %16{{$}}
# CHECK-NEXT: {{^}}update %w1 = %17 grad %14{{$}}
# CHECK-NEXT: {{^}}update %18 = %19{{$}}
# CHECK-NEXT: {{^}}update %w2 = %20 grad %9{{$}}
# CHECK-NEXT: {{^}}train %loss with sgd(lr = 0.1, momentum = 0.9, wd = 0.0){{$}}
# CHECK-NOT: {{.}}
# Partitioned: the forward's one all_reduce over tp (Megatron), none over
# tp in the backward; the gradients of w1 and w2 are partial over dp (the
# batch is split) and resolved by one all_reduce each; each param's update
# names its gradient as the optimizer reads it, after that all_reduce.
# The products read their transposed operands in place (trans = a).
# PART: {{^}}%3 = all_reduce %2 {axes = [tp]} : f32[4, 16] auto(dp, _){{$}}
# PART-NOT: axes = [tp]
# PART: {{^}}%loss = all_reduce %6 {axes = [dp]} : f32[] auto(){{$}}
# PART: {{^}}%11 = matmul %1, %9 {trans = a} : f32[16, 16] auto(tp, _) partial(dp) phase backward{{$}}
# PART: {{^}}%12 = all_reduce %11 {axes = [dp]} : f32[16, 16] auto(tp, _) phase backward{{$}}
# PART: {{^}}%17 = all_reduce %16 {axes = [dp]} : f32[16, 16] auto(_, tp) phase backward{{$}}
# PART: {{^}}%20 = sgd %w1, %19 {lr = 0.1, wd = 0.0} : f32[16, 16] auto(_, tp) phase optimizer{{$}}
# PART: {{^}}%23 = sgd %w2, %22 {lr = 0.1, wd = 0.0} : f32[16, 16] auto(tp, _) phase optimizer{{$}}
# PART-NOT: all_reduce
# PART: {{^}}update %w1 = %20 grad %17{{$}}
# PART: {{^}}update %w2 = %23 grad %12{{$}}
