# RUN: %expect 1 %shardc %s --emit ir 2>&1 | FileCheck %s
# An integer index must lie in its dim (-size .. size - 1).
input x : f32[4, 8]
y = x[1, 8]
output y
# CHECK: {{^}}{{.*}}index-out-of-range.sh:4:10: error: index 8 is out of range for dimension 1 of size 8{{$}}
