# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# Only one dimension can be inferred.
mesh dp, tp
input x : f32[4, 8]
y = reshape(x, [-1, 2, -1])
# CHECK: {{^}}{{.*}}reshape-two-holes.sh:6:5: error: reshape can infer only one dimension (-1), got [-1, 2, -1]{{$}}
# CHECK-NEXT: {{^}}y = reshape(x, [-1, 2, -1]){{$}}
# CHECK-NEXT: {{^}}    ^{{$}}
