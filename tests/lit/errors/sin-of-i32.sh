# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# sin and cos take radians in a floating-point dtype.
mesh dp, tp
input pos : i32[4, 8]
y = cos(pos)
# CHECK: {{^}}{{.*}}sin-of-i32.sh:6:5: error: cos needs a floating-point operand, got i32[4, 8]{{$}}
# CHECK-NEXT: {{^}}y = cos(pos){{$}}
# CHECK-NEXT: {{^}}    ^{{$}}
