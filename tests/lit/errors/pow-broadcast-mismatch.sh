# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# pow(a, b) broadcasts like '+'.
mesh dp, tp
input x : f32[4, 8]
input y : f32[2, 8]
z = pow(x, y)
# CHECK: {{^}}{{.*}}pow-broadcast-mismatch.sh:7:5: error: operands of pow do not broadcast: f32[4, 8] and f32[2, 8]{{$}}
# CHECK-NEXT: {{^}}z = pow(x, y){{$}}
# CHECK-NEXT: {{^}}    ^{{$}}
