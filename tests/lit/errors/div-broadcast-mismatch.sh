# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# The error is at the operator of the failing division.
mesh dp, tp
input x : f32[4, 8]
input y : f32[8, 4]
z = (x + 1) / y
# CHECK: {{^}}{{.*}}div-broadcast-mismatch.sh:7:13: error: operands of '/' do not broadcast: f32[4, 8] and f32[8, 4]{{$}}
# CHECK-NEXT: {{^}}z = (x + 1) / y{{$}}
# CHECK-NEXT: {{^}}            ^{{$}}
