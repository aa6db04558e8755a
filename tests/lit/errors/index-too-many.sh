# RUN: %expect 1 %shardc %s --emit ir 2>&1 | FileCheck %s
# More indices than dims.
input x : f32[4, 8]
y = x[1, 2, :]
output y
# CHECK: {{^}}{{.*}}index-too-many.sh:4:13: error: too many indices: the tensor has 2 dimensions{{$}}
