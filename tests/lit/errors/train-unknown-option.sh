# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# sgd has no beta1.
mesh dp, tp
input x : f32[4, 8]
param w : f32[8, 8] = normal(0.02)
loss = mean(x @ w)
train loss with sgd(lr = 0.1, beta1 = 0.9)
# CHECK: {{^}}{{.*}}train-unknown-option.sh:8:31: error: sgd has no option 'beta1' (its options: lr, momentum, wd, clip, warmup, decay, steps, min_lr){{$}}
# CHECK-NEXT: {{^}}train loss with sgd(lr = 0.1, beta1 = 0.9){{$}}
# CHECK-NEXT: {{^}}                              ^{{$}}
