# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# [2, 4, 8] * [3, 1, 8]: the leading dimensions differ.
mesh dp, tp
input x : f32[2, 4, 8]
input y : f32[3, 1, 8]
z = x * y
# CHECK: {{^}}{{.*}}mul-broadcast-mismatch.sh:7:7: error: operands of '*' do not broadcast: f32[2, 4, 8] and f32[3, 1, 8]{{$}}
# CHECK-NEXT: {{^}}z = x * y{{$}}
# CHECK-NEXT: {{^}}      ^{{$}}
