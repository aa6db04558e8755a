# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# Activations need floating point.
mesh dp, tp
input ids : i32[4, 8]
y = relu(ids)
# CHECK: {{^}}{{.*}}relu-of-i32.sh:6:5: error: relu needs a floating-point operand, got i32[4, 8]{{$}}
# CHECK-NEXT: {{^}}y = relu(ids){{$}}
# CHECK-NEXT: {{^}}    ^{{$}}
