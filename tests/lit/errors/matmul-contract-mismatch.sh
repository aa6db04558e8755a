# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# [4, 8] @ [16, 32]: 8 does not meet 16.
mesh dp, tp
input x : f32[4, 8]
param w : f32[16, 32] = normal(0.02)
y = x @ w
# CHECK: {{^}}{{.*}}matmul-contract-mismatch.sh:7:7: error: '@' contracts dimension of size 8 with one of size 16: f32[4, 8] @ f32[16, 32]{{$}}
# CHECK-NEXT: {{^}}y = x @ w{{$}}
# CHECK-NEXT: {{^}}      ^{{$}}
