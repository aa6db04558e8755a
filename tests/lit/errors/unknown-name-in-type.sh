# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# A dimension that names an undefined constant.
mesh dp, tp
let D = 8
input x : f32[B, D]
# CHECK: {{^}}{{.*}}unknown-name-in-type.sh:6:15: error: unknown name 'B'{{$}}
# CHECK-NEXT: {{^}}input x : f32[B, D]{{$}}
# CHECK-NEXT: {{^}}              ^{{$}}
