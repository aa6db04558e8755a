# RUN: %expect 1 %shardc %s --mesh 2x2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# --mesh gives three sizes for two axes.
mesh dp, tp
input x : f32[4, 8]
# CHECK: {{^}}{{.*}}mesh-cli-wrong-count.sh:4:1: error: --mesh gives 3 sizes, but the mesh has 2 axes (dp, tp){{$}}
# CHECK-NEXT: {{^}}mesh dp, tp{{$}}
# CHECK-NEXT: {{^}}^{{$}}
