# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# Only one train statement.
mesh dp, tp
input x : f32[4, 8]
param w : f32[8, 8] = normal(0.02)
loss = mean(x @ w)
train loss with sgd(lr = 0.1)
train loss with adamw(lr = 3e-4)
# CHECK: {{^}}{{.*}}train-twice.sh:9:1: error: 'train' is already given (line 8){{$}}
# CHECK-NEXT: {{^}}train loss with adamw(lr = 3e-4){{$}}
# CHECK-NEXT: {{^}}^{{$}}
