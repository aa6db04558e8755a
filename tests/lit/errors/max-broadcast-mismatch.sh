# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# max(a, b) broadcasts like '+'.
mesh dp, tp
input x : f32[4, 8]
input y : f32[5, 8]
z = max(x, y)
# CHECK: {{^}}{{.*}}max-broadcast-mismatch.sh:7:5: error: operands of max do not broadcast: f32[4, 8] and f32[5, 8]{{$}}
# CHECK-NEXT: {{^}}z = max(x, y){{$}}
# CHECK-NEXT: {{^}}    ^{{$}}
