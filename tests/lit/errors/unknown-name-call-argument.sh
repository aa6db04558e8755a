# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# An undefined name as an argument of a builtin.
mesh dp, tp
input x : f32[4, 8]
y = softmax(x + bias, axis = -1)
# CHECK: {{^}}{{.*}}unknown-name-call-argument.sh:6:17: error: unknown name 'bias'{{$}}
# CHECK-NEXT: {{^}}y = softmax(x + bias, axis = -1){{$}}
# CHECK-NEXT: {{^}}                ^{{$}}
