# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# xavier is not an initializer.
mesh dp, tp
param w : f32[8, 8] = xavier(1.0)
# CHECK: {{^}}{{.*}}unknown-initializer.sh:5:23: error: unknown initializer (use zeros, ones, normal(STD) or uniform(LO, HI)){{$}}
# CHECK-NEXT: {{^}}param w : f32[8, 8] = xavier(1.0){{$}}
# CHECK-NEXT: {{^}}                      ^{{$}}
