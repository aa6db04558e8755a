# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# relu takes one argument.
mesh dp, tp
input x : f32[4, 8]
y = relu(x, 2)
# CHECK: {{^}}{{.*}}builtin-too-many-arguments.sh:6:13: error: too many arguments to 'relu' (it takes x){{$}}
# CHECK-NEXT: {{^}}y = relu(x, 2){{$}}
# CHECK-NEXT: {{^}}            ^{{$}}
