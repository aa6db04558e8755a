# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# f32 + bf16 needs an explicit cast.
mesh dp, tp
input x : f32[4, 8]
input y : bf16[4, 8]
z = x + y
# CHECK: {{^}}{{.*}}mixed-dtype-f32-bf16.sh:7:7: error: mixed dtypes in '+': f32 and bf16 (use cast to convert one){{$}}
# CHECK-NEXT: {{^}}z = x + y{{$}}
# CHECK-NEXT: {{^}}      ^{{$}}
