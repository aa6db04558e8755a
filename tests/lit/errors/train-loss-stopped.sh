# RUN: %expect 1 %shardc %s --mesh 2 -o %t.plan 2>&1 | FileCheck %s
# RUN: test ! -e %t.plan
# Every path from the params to the loss passes a stop_gradient.
mesh dp
input x : f32[8, 4]
param w : f32[4, 4] = normal(0.1)
loss = mean(stop_gradient(x @ w))
train loss with sgd(lr = 0.1)
# CHECK: {{^}}{{.*}}train-loss-stopped.sh:8:7: error: train: the loss 'loss' depends on params only through stop_gradient, so no gradient reaches one{{$}}
# CHECK-NEXT: {{^}}train loss with sgd(lr = 0.1){{$}}
