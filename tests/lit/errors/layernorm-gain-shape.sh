# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# The gain must have the shape of the last dimension of x.
mesh dp, tp
input x : f32[4, 8]
param g : f32[4] = ones
param b : f32[8] = zeros
y = layernorm(x, g, b)
# CHECK: {{^}}{{.*}}layernorm-gain-shape.sh:8:5: error: layernorm needs g of shape [8] to match the last dimension of f32[4, 8], got f32[4]{{$}}
# CHECK-NEXT: {{^}}y = layernorm(x, g, b){{$}}
# CHECK-NEXT: {{^}}    ^{{$}}
