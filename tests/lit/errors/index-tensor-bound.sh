# RUN: %expect 1 %shardc %s --emit ir 2>&1 | FileCheck %s
# Bounds are integer constants, not tensors.
input x : f32[4]
input i : i32[]
y = x[i:]
output y
# CHECK: {{^}}{{.*}}index-tensor-bound.sh:5:7: error: 'i' is not an integer constant{{$}}
