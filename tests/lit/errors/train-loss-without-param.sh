# RUN: %expect 1 %shardc %s --mesh 2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# The program has a param, but the loss does not depend on it: the error
# is at the loss named by train (it was "cannot train: ..." with no place).
mesh dp
input x : f32[8, 4]
param w : f32[4, 4] = normal(0.5)
y = x @ w
loss = sum(sum(x, axis = 0), axis = -1)
output y
train loss with sgd(lr = 0.1)
# CHECK: {{^}}{{.*}}train-loss-without-param.sh:11:7: error: train: the loss 'loss' does not depend on any param, so there is nothing to train{{$}}
# CHECK-NEXT: {{^}}train loss with sgd(lr = 0.1){{$}}
# CHECK-NEXT: {{^}}      ^{{$}}
