# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# 32 elements cannot become 30.
mesh dp, tp
input x : f32[4, 8]
y = reshape(x, [5, 6])
# CHECK: {{^}}{{.*}}reshape-element-count.sh:6:5: error: cannot reshape f32[4, 8] (32 elements) to [5, 6] (30 elements){{$}}
# CHECK-NEXT: {{^}}y = reshape(x, [5, 6]){{$}}
# CHECK-NEXT: {{^}}    ^{{$}}
