# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# min(a, b) broadcasts like '+'.
mesh dp, tp
input x : f32[4, 8]
input y : f32[4, 3]
z = min(x, y)
# CHECK: {{^}}{{.*}}min-broadcast-mismatch.sh:7:5: error: operands of min do not broadcast: f32[4, 8] and f32[4, 3]{{$}}
# CHECK-NEXT: {{^}}z = min(x, y){{$}}
# CHECK-NEXT: {{^}}    ^{{$}}
