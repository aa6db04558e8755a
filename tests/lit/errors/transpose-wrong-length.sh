# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# A permutation of 3 axes for a rank-2 tensor.
mesh dp, tp
input x : f32[4, 8]
y = transpose(x, [1, 0, 2])
# CHECK: {{^}}{{.*}}transpose-wrong-length.sh:6:5: error: transpose of f32[4, 8] needs a permutation of its 2 axes, got [1, 0, 2]{{$}}
# CHECK-NEXT: {{^}}y = transpose(x, [1, 0, 2]){{$}}
# CHECK-NEXT: {{^}}    ^{{$}}
