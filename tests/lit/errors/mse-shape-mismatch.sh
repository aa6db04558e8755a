# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# mse compares tensors of one shape.
mesh dp, tp
input x : f32[4, 8]
input y : f32[4, 1]
loss = mse(x, y)
# CHECK: {{^}}{{.*}}mse-shape-mismatch.sh:7:8: error: mse needs operands of the same shape, got f32[4, 8] and f32[4, 1]{{$}}
# CHECK-NEXT: {{^}}loss = mse(x, y){{$}}
# CHECK-NEXT: {{^}}       ^{{$}}
