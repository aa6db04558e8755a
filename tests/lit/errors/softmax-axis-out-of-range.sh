# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# softmax over an axis the tensor does not have.
mesh dp, tp
input x : f32[4, 8]
y = softmax(x, axis = 3)
# CHECK: {{^}}{{.*}}softmax-axis-out-of-range.sh:6:5: error: axis 3 is out of range for softmax of f32[4, 8]{{$}}
# CHECK-NEXT: {{^}}y = softmax(x, axis = 3){{$}}
# CHECK-NEXT: {{^}}    ^{{$}}
