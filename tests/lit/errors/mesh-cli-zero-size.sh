# RUN: %expect 1 %shardc %s --mesh 2x0 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# An axis of size 0 is no mesh.
mesh dp, tp
input x : f32[4, 8]
# CHECK: {{^}}{{.*}}mesh-cli-zero-size.sh:4:1: error: --mesh gives size 0 for axis 'tp'; sizes must be at least 1{{$}}
# CHECK-NEXT: {{^}}mesh dp, tp{{$}}
# CHECK-NEXT: {{^}}^{{$}}
