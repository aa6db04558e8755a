# zero 0 over AXIS is no ZeRO at all, so -D can switch ZeRO off: with
# Z=0 the plan is the one without a zero clause (the same report), with
# Z=1 the gradients are reduce-scattered and the params all-gathered.
# RUN: %shardc %s --mesh 4x1 -D Z=0 --report > %t.z0
# RUN: sed 's/ zero Z over dp//' %s > %t.none.sh
# RUN: %shardc %t.none.sh --mesh 4x1 --report > %t.none
# RUN: diff %t.z0 %t.none
# RUN: FileCheck %s --check-prefix=Z0 < %t.z0
# RUN: %shardc %s --mesh 4x1 -D Z=1 --report | FileCheck %s --check-prefix=Z1
# RUN: %expect 1 %shardc %s --mesh 4x1 -D Z=-1 --report 2>&1 | FileCheck %s --check-prefix=NEG
# Z0: all_reduce      dp
# Z0-NOT: reduce_scatter
# Z1: reduce_scatter  dp
# Z1: all_gather      dp
# NEG: zero0.sh:[[@LINE+6]]:{{[0-9]+}}: error: zero stage must be 0, 1, 2 or 3, got -1
mesh dp, tp
let Z = 0
input x : f32[8, 16] shard(dp, _)
param w : f32[16, 16] = normal(0.1)
loss = mse(x @ w, x)
train loss with adamw(lr = 1e-3) zero Z over dp
