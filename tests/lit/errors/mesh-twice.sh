# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# A second mesh statement.
mesh dp, tp
input x : f32[4, 8]
mesh pp
# CHECK: {{^}}{{.*}}mesh-twice.sh:6:1: error: the mesh is already declared (line 4){{$}}
# CHECK-NEXT: {{^}}mesh pp{{$}}
# CHECK-NEXT: {{^}}^{{$}}
