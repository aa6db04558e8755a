# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# train is a top-level statement.
mesh dp, tp
input x : f32[4, 8]
param w : f32[8] = ones
loss = mean(x * w)
repeat 1 as r {
    train loss with sgd(lr = 0.1)
}
# CHECK: {{^}}{{.*}}train-inside-repeat.sh:9:5: error: 'train' belongs at the top level, not inside a repeat{{$}}
# CHECK-NEXT: {{^}}    train loss with sgd(lr = 0.1){{$}}
# CHECK-NEXT: {{^}}    ^{{$}}
