# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# A constant is not a variable.
mesh dp, tp
let B = 4
input x : f32[B, 8]
B = x + 1
# CHECK: {{^}}{{.*}}assign-to-constant.sh:7:1: error: cannot assign to 'B', which is a constant (line 5){{$}}
# CHECK-NEXT: {{^}}B = x + 1{{$}}
# CHECK-NEXT: {{^}}^{{$}}
