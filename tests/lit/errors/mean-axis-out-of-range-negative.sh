# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# -3 counts past the first axis of a rank-2 tensor.
mesh dp, tp
input x : f32[4, 8]
y = mean(x, axis = -3, keepdims = true)
# CHECK: {{^}}{{.*}}mean-axis-out-of-range-negative.sh:6:5: error: axis -3 is out of range for mean of f32[4, 8]{{$}}
# CHECK-NEXT: {{^}}y = mean(x, axis = -3, keepdims = true){{$}}
# CHECK-NEXT: {{^}}    ^{{$}}
