# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# The learning rate has no default.
mesh dp, tp
input x : f32[4, 8]
param w : f32[8, 8] = normal(0.02)
loss = mean(x @ w)
train loss with adamw(beta1 = 0.9)
# CHECK: {{^}}{{.*}}train-missing-lr.sh:8:17: error: adamw needs a learning rate, as in adamw(lr = 0.01){{$}}
# CHECK-NEXT: {{^}}train loss with adamw(beta1 = 0.9){{$}}
# CHECK-NEXT: {{^}}                ^{{$}}
