# RUN: %expect 1 %shardc %s --emit ir 2>&1 | FileCheck %s
# gather's ids have x's rank and, but along the axis, its dims.
input x : f32[4, 8]
input ids : i32[3, 2]
y = gather(x, ids, axis = 1)
output y
# CHECK: {{^}}{{.*}}gather-ids-shape.sh:5:15: error: gather needs ids of x's rank, every dim but the axis (1) equal to x's (rank below 8): x is f32[4, 8], ids i32[3, 2]{{$}}
