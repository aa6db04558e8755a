# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# A param that takes the name of an input.
mesh dp, tp
input w : f32[4, 8]
param w : f32[8, 8] = zeros
# CHECK: {{^}}{{.*}}redefine-param-as-input.sh:6:7: error: 'w' is already defined as an input (line 5){{$}}
# CHECK-NEXT: {{^}}param w : f32[8, 8] = zeros{{$}}
# CHECK-NEXT: {{^}}      ^{{$}}
