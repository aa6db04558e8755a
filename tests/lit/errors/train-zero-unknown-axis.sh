# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# zero ... over an axis the mesh lacks.
mesh dp, tp
input x : f32[4, 8]
param w : f32[8, 8] = normal(0.02)
loss = mean(x @ w)
train loss with adamw(lr = 3e-4) zero 1 over pp
# CHECK: {{^}}{{.*}}train-zero-unknown-axis.sh:8:46: error: unknown mesh axis 'pp'{{$}}
# CHECK-NEXT: {{^}}train loss with adamw(lr = 3e-4) zero 1 over pp{{$}}
# CHECK-NEXT: {{^}}                                             ^{{$}}
