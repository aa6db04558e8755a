# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# The loss must be a scalar.
mesh dp, tp
input x : f32[4, 8]
param w : f32[8, 8] = normal(0.02)
y = x @ w
train y with sgd(lr = 0.1)
# CHECK: {{^}}{{.*}}train-non-scalar.sh:8:7: error: train needs a scalar loss, but 'y' is f32[4, 8]{{$}}
# CHECK-NEXT: {{^}}train y with sgd(lr = 0.1){{$}}
# CHECK-NEXT: {{^}}      ^{{$}}
