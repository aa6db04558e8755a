# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# 32 is not a multiple of 3.
mesh dp, tp
input x : f32[4, 8]
y = reshape(x, [3, -1])
# CHECK: {{^}}{{.*}}reshape-hole-not-multiple.sh:6:5: error: cannot reshape f32[4, 8] (32 elements) to [3, -1]: 32 is not a multiple of 3{{$}}
# CHECK-NEXT: {{^}}y = reshape(x, [3, -1]){{$}}
# CHECK-NEXT: {{^}}    ^{{$}}
