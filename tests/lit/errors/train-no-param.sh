# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# A training step needs something to train.
mesh dp, tp
input x : f32[4, 8]
loss = mean(x)
train loss with sgd(lr = 0.1)
# CHECK: {{^}}{{.*}}train-no-param.sh:7:1: error: train: the program has no param to train{{$}}
# CHECK-NEXT: {{^}}train loss with sgd(lr = 0.1){{$}}
# CHECK-NEXT: {{^}}^{{$}}
