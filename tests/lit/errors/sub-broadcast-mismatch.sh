# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# [4, 8] - [4]: aligned at the end, 8 meets 4.
mesh dp, tp
input x : f32[4, 8]
input b : f32[4]
z = x - b
# CHECK: {{^}}{{.*}}sub-broadcast-mismatch.sh:7:7: error: operands of '-' do not broadcast: f32[4, 8] and f32[4]{{$}}
# CHECK-NEXT: {{^}}z = x - b{{$}}
# CHECK-NEXT: {{^}}      ^{{$}}
