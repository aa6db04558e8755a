# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# '@' does not take a number.
mesh dp, tp
input x : f32[4, 8]
y = x @ 2
# CHECK: {{^}}{{.*}}matmul-number-operand.sh:6:7: error: '@' needs tensors on both sides, not a number{{$}}
# CHECK-NEXT: {{^}}y = x @ 2{{$}}
# CHECK-NEXT: {{^}}      ^{{$}}
