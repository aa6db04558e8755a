# Two column-parallel matmuls of one input, y = (h @ a) * (h @ b): the
# input gradient is the sum of two partial sums over tp, added before one
# all-reduce (was 2). The reason says so.
# RUN: %shardc %s --mesh 1x4 --report | FileCheck %s --check-prefix=REPORT
# RUN: %shardc %s --mesh 1x4 --emit sharded-ir | FileCheck %s --check-prefix=IR
# RUN: %shardc %s --mesh 1x4 --explain-sharding | FileCheck %s --check-prefix=WHY
# REPORT:      {{^}}    0    all_reduce      tp         f32              128            768  forward{{$}}
# REPORT-NEXT: {{^}}    1    all_reduce      tp         f32              128            768  backward{{$}}
# REPORT-NEXT: {{^}}  bytes sent by kind:  all_reduce 1536 (2){{$}}
# REPORT-NEXT: {{^}}  bytes sent by axes:  tp 1536 (2){{$}}
# REPORT-NEXT: {{^}}step time
# IR: [[A:%[0-9]+]] = matmul {{.*}} partial(tp) phase backward
# IR: [[B:%[0-9]+]] = matmul {{.*}} partial(tp) phase backward
# IR-NEXT: [[S:%[0-9]+]] = add [[A]], [[B]] : f32[8, 16] auto(dp, _) partial(tp) phase backward
# IR-NEXT: {{%[0-9]+}} = all_reduce [[S]] {axes = [tp]} : f32[8, 16] auto(dp, _) phase backward
# IR-NOT: all_reduce
# WHY: all_reduce over tp (line 26, 768 bytes per rank): '+' of two partial sums, added before one all_reduce in place of one for each; the first was: {{.*}} partial(tp) -> (dp, _) for matmul
mesh dp, tp
input x : f32[8, 16] shard(dp, _)
input y : f32[8, 16] shard(dp, _)
param w0 : f32[16, 16] = normal(0.2)
param a : f32[16, 32] shard(_, tp) = normal(0.2)
param b : f32[16, 32] shard(_, tp) = normal(0.2)
param c : f32[32, 16] shard(tp, _) = normal(0.2)
h = x @ w0
u = (h @ a) * (h @ b)
loss = mse(u @ c, y)
train loss with sgd(lr = 0.1)
