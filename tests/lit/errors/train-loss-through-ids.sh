# RUN: %expect 1 %shardc %s --mesh 2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# A loss that reaches the param only through integers (no gradient flows
# through a cast to i32) does not depend on it either, as autodiff sees it.
mesh dp
input x : f32[8, 4]
param w : f32[4, 4] = normal(0.5)
n = cast(x @ w, i32)
loss = sum(sum(cast(n, f32), axis = 0), axis = -1)
train loss with sgd(lr = 0.1)
# CHECK: {{^}}{{.*}}train-loss-through-ids.sh:10:7: error: train: the loss 'loss' does not depend on any param, so there is nothing to train{{$}}
# CHECK-NEXT: {{^}}train loss with sgd(lr = 0.1){{$}}
# CHECK-NEXT: {{^}}      ^{{$}}
