# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# amax over axis 1 of a vector.
mesh dp, tp
input x : f32[8]
y = amax(x, axis = 1)
# CHECK: {{^}}{{.*}}amax-axis-out-of-range.sh:6:5: error: axis 1 is out of range for amax of f32[8]{{$}}
# CHECK-NEXT: {{^}}y = amax(x, axis = 1){{$}}
# CHECK-NEXT: {{^}}    ^{{$}}
