# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# The rmsnorm gain must have the shape of the last dimension of x.
mesh dp, tp
input x : f32[4, 8]
param g : f32[16] = ones
y = rmsnorm(x, g)
# CHECK: {{^}}{{.*}}rmsnorm-gain-shape.sh:7:5: error: rmsnorm needs g of shape [8] to match the last dimension of f32[4, 8], got f32[16]{{$}}
# CHECK-NEXT: {{^}}y = rmsnorm(x, g){{$}}
# CHECK-NEXT: {{^}}    ^{{$}}
