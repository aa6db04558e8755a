# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# The same input declared twice.
mesh dp, tp
input x : f32[4, 8]
input x : f32[4, 8]
# CHECK: {{^}}{{.*}}redefine-input.sh:6:7: error: 'x' is already defined as an input (line 5){{$}}
# CHECK-NEXT: {{^}}input x : f32[4, 8]{{$}}
# CHECK-NEXT: {{^}}      ^{{$}}
