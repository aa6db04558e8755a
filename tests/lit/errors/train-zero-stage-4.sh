# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# ZeRO has stages 0 (none) to 3.
mesh dp, tp
input x : f32[4, 8]
param w : f32[8, 8] = normal(0.02)
loss = mean(x @ w)
train loss with adamw(lr = 3e-4) zero 4 over dp
# CHECK: {{^}}{{.*}}train-zero-stage-4.sh:8:39: error: zero stage must be 0, 1, 2 or 3, got 4{{$}}
# CHECK-NEXT: {{^}}train loss with adamw(lr = 3e-4) zero 4 over dp{{$}}
# CHECK-NEXT: {{^}}                                      ^{{$}}
