# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# [0, 0] repeats an axis.
mesh dp, tp
input x : f32[4, 8]
y = transpose(x, [0, 0])
# CHECK: {{^}}{{.*}}transpose-bad-permutation.sh:6:5: error: transpose of f32[4, 8] needs a permutation of its 2 axes, got [0, 0]{{$}}
# CHECK-NEXT: {{^}}y = transpose(x, [0, 0]){{$}}
# CHECK-NEXT: {{^}}    ^{{$}}
