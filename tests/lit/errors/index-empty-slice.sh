# RUN: %expect 1 %shardc %s --emit ir 2>&1 | FileCheck %s
# A range that keeps nothing (after clamping, as Python) is an error:
# no dim has size 0.
let K = 9
input x : f32[4, 8]
y = x[:, K:]
output y
# CHECK: {{^}}{{.*}}index-empty-slice.sh:6:10: error: the slice 9:8 of dimension 1 (size 8) is empty{{$}}
