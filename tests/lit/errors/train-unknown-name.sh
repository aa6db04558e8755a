# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# train of a name that is not defined.
mesh dp, tp
input x : f32[4, 8]
param w : f32[8, 8] = normal(0.02)
loss = mean(x @ w)
train los with sgd(lr = 0.1)
# CHECK: {{^}}{{.*}}train-unknown-name.sh:8:7: error: unknown name 'los'{{$}}
# CHECK-NEXT: {{^}}train los with sgd(lr = 0.1){{$}}
# CHECK-NEXT: {{^}}      ^{{$}}
