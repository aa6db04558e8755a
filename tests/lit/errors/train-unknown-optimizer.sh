# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# Only sgd and adamw.
mesh dp, tp
input x : f32[4, 8]
param w : f32[8, 8] = normal(0.02)
loss = mean(x @ w)
train loss with adam(lr = 0.1)
# CHECK: {{^}}{{.*}}train-unknown-optimizer.sh:8:17: error: unknown optimizer (use sgd(...) or adamw(...)){{$}}
# CHECK-NEXT: {{^}}train loss with adam(lr = 0.1){{$}}
# CHECK-NEXT: {{^}}                ^{{$}}
