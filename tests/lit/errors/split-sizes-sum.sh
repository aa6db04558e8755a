# RUN: %expect 1 %shardc %s --emit ir 2>&1 | FileCheck %s
# split's sizes must add up to the dim.
input x : f32[4, 8]
a, b = split(x, [2, 4], axis = 1)
output a, b
# CHECK: {{^}}{{.*}}split-sizes-sum.sh:4:17: error: split's sizes sum to 6, but dimension 1 has 8 elements{{$}}
