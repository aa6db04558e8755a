# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# Matmul operands must share a dtype.
mesh dp, tp
input x : bf16[4, 8]
param w : f32[8, 8] = normal(0.02)
y = x @ w
# CHECK: {{^}}{{.*}}mixed-dtype-matmul.sh:7:7: error: mixed dtypes in '@': bf16 and f32 (use cast to convert one){{$}}
# CHECK-NEXT: {{^}}y = x @ w{{$}}
# CHECK-NEXT: {{^}}      ^{{$}}
