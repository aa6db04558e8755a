# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# A rank-2 tensor has axes 0 and 1 (or -1 and -2).
mesh dp, tp
input x : f32[4, 8]
y = sum(x, axis = 2)
# CHECK: {{^}}{{.*}}sum-axis-out-of-range.sh:6:5: error: axis 2 is out of range for sum of f32[4, 8]{{$}}
# CHECK-NEXT: {{^}}y = sum(x, axis = 2){{$}}
# CHECK-NEXT: {{^}}    ^{{$}}
