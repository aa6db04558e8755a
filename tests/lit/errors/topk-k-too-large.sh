# RUN: %expect 1 %shardc %s --emit ir 2>&1 | FileCheck %s
# k lies in 1 .. the last dim.
input x : f32[4, 8]
v, i = topk(x, 9)
output v, i
# CHECK: {{^}}{{.*}}topk-k-too-large.sh:4:16: error: topk's k must be 1 to 8, got 9{{$}}
