# RUN: %expect 1 %shardc %s --mesh 2x2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# One axis name given twice in the mesh.
mesh dp, tp, dp
input x : f32[4, 8]
# CHECK: {{^}}{{.*}}mesh-axis-twice.sh:4:14: error: mesh axis 'dp' is declared twice{{$}}
# CHECK-NEXT: {{^}}mesh dp, tp, dp{{$}}
# CHECK-NEXT: {{^}}             ^{{$}}
