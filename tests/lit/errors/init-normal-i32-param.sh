# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# normal makes floats: an i32 param made by it was all zeros.
mesh dp, tp
param w : i32[8, 8] = normal(0.02)
# CHECK: {{^}}{{.*}}init-normal-i32-param.sh:5:23: error: an i32 param cannot be made by normal, which makes floats (use zeros, ones or uniform(LO, HI) with whole-number bounds){{$}}
# CHECK-NEXT: {{^}}param w : i32[8, 8] = normal(0.02){{$}}
# CHECK-NEXT: {{^}}                      ^{{$}}
