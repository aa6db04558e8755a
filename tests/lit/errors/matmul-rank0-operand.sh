# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# A scalar tensor has no dimension to contract.
mesh dp, tp
input x : f32[4, 8]
input s : f32[]
y = x @ s
# CHECK: {{^}}{{.*}}matmul-rank0-operand.sh:7:7: error: '@' needs operands of rank 1 or more, got f32[4, 8] @ f32[]{{$}}
# CHECK-NEXT: {{^}}y = x @ s{{$}}
# CHECK-NEXT: {{^}}      ^{{$}}
