# RUN: %expect 1 %shardc %s --emit ir 2>&1 | FileCheck %s
# Only tensors can be indexed.
let K = 3
input x : f32[4]
y = x + K[0]
output y
# CHECK: {{^}}{{.*}}index-of-number.sh:5:10: error: only a tensor can be indexed, not a number{{$}}
