# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# A 1-D right operand contracts its only dimension.
mesh dp, tp
input x : f32[4, 8]
input v : f32[4]
y = x @ v
# CHECK: {{^}}{{.*}}matmul-contract-mismatch-vector.sh:7:7: error: '@' contracts dimension of size 8 with one of size 4: f32[4, 8] @ f32[4]{{$}}
# CHECK-NEXT: {{^}}y = x @ v{{$}}
# CHECK-NEXT: {{^}}      ^{{$}}
