# RUN: %expect 1 %shardc %s --emit ir 2>&1 | FileCheck %s
# concat joins tensors, not numbers.
input a : f32[4]
y = concat([a, 1.0])
output y
# CHECK: {{^}}{{.*}}concat-number.sh:4:16: error: 'concat' joins tensors, not numbers{{$}}
