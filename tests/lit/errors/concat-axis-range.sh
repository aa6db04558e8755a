# RUN: %expect 1 %shardc %s --emit ir 2>&1 | FileCheck %s
# The axis lies in -rank .. rank - 1.
input a : f32[4, 2]
y = concat([a, a], axis = -3)
output y
# CHECK: {{^}}{{.*}}concat-axis-range.sh:4:27: error: concat's axis -3 is out of range for a tensor of rank 2{{$}}
