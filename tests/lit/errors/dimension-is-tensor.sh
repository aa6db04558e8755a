# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# A dimension is an integer constant, not a tensor.
mesh dp, tp
input x : f32[4, 8]
input y : f32[x, 8]
# CHECK: {{^}}{{.*}}dimension-is-tensor.sh:6:15: error: 'x' is not an integer constant{{$}}
# CHECK-NEXT: {{^}}input y : f32[x, 8]{{$}}
# CHECK-NEXT: {{^}}              ^{{$}}
