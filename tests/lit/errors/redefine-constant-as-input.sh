# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# An input that takes the name of a constant.
mesh dp, tp
let B = 4
input B : f32[4, 8]
# CHECK: {{^}}{{.*}}redefine-constant-as-input.sh:6:7: error: 'B' is already defined as a constant (line 5){{$}}
# CHECK-NEXT: {{^}}input B : f32[4, 8]{{$}}
# CHECK-NEXT: {{^}}      ^{{$}}
