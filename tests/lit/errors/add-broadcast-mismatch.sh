# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# [4, 8] + [4, 6]: the last dimensions differ.
mesh dp, tp
input x : f32[4, 8]
input y : f32[4, 6]
z = x + y
# CHECK: {{^}}{{.*}}add-broadcast-mismatch.sh:7:7: error: operands of '+' do not broadcast: f32[4, 8] and f32[4, 6]{{$}}
# CHECK-NEXT: {{^}}z = x + y{{$}}
# CHECK-NEXT: {{^}}      ^{{$}}
