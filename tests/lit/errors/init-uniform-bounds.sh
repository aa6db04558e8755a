# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# uniform(LO, HI) needs LO < HI.
mesh dp, tp
param w : f32[8, 8] = uniform(0.1, -0.1)
# CHECK: {{^}}{{.*}}init-uniform-bounds.sh:5:23: error: uniform needs LO < HI, got uniform(0.1, -0.1){{$}}
# CHECK-NEXT: {{^}}param w : f32[8, 8] = uniform(0.1, -0.1){{$}}
# CHECK-NEXT: {{^}}                      ^{{$}}
