# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# Dimensions are at least 1.
mesh dp, tp
let B = 4, H = 0
input x : f32[B, H]
# CHECK: {{^}}{{.*}}dimension-zero.sh:6:18: error: dimension 1 of 'x' is 0; sizes must be at least 1{{$}}
# CHECK-NEXT: {{^}}input x : f32[B, H]{{$}}
# CHECK-NEXT: {{^}}                 ^{{$}}
