# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# The learning rate is positive.
mesh dp, tp
input x : f32[4, 8]
param w : f32[8] = ones
loss = mean(x * w)
train loss with sgd(lr = -0.1)
# CHECK: {{^}}{{.*}}train-negative-lr.sh:8:26: error: option 'lr' of sgd is out of range: -0.1{{$}}
# CHECK-NEXT: {{^}}train loss with sgd(lr = -0.1){{$}}
# CHECK-NEXT: {{^}}                         ^{{$}}
