# RUN: %expect 1 %shardc %s --emit ir 2>&1 | FileCheck %s
# topk gives values and indices: bind both.
input x : f32[4, 8]
v = topk(x, 2)
output v
# CHECK: {{^}}{{.*}}topk-one-name.sh:4:5: error: topk gives 2 values here; bind each to a name, as in v, i = topk(...){{$}}
