# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# A standard deviation is positive.
mesh dp, tp
param w : f32[8, 8] = normal(-0.02)
# CHECK: {{^}}{{.*}}init-normal-negative-std.sh:5:30: error: the standard deviation of normal must be positive{{$}}
# CHECK-NEXT: {{^}}param w : f32[8, 8] = normal(-0.02){{$}}
# CHECK-NEXT: {{^}}                             ^{{$}}
