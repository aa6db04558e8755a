# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# The bias must have the shape of the last dimension of x.
mesh dp, tp
input x : f32[4, 8]
param g : f32[8] = ones
param b : f32[1, 8] = zeros
y = layernorm(x, g, b, eps = 1e-5)
# CHECK: {{^}}{{.*}}layernorm-bias-shape.sh:8:5: error: layernorm needs b of shape [8] to match the last dimension of f32[4, 8], got f32[1, 8]{{$}}
# CHECK-NEXT: {{^}}y = layernorm(x, g, b, eps = 1e-5){{$}}
# CHECK-NEXT: {{^}}    ^{{$}}
