# RUN: %expect 1 %shardc %s --emit ir 2>&1 | FileCheck %s
# concat joins tensors whose other dims match.
input a : f32[4, 8]
input b : f32[3, 8]
y = concat([a, b], axis = 1)
output y
# CHECK: {{^}}{{.*}}concat-dims-mismatch.sh:5:5: error: concat along dimension 1 needs every other dimension equal: f32[4, 8] and f32[3, 8]{{$}}
