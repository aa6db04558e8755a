# RUN: %expect 1 %shardc %s --emit ir 2>&1 | FileCheck %s
# one_hot takes i32 ids.
input x : f32[4]
y = one_hot(x, 3)
output y
# CHECK: {{^}}{{.*}}one-hot-float-ids.sh:4:13: error: one_hot's ids must be i32, got f32[4]{{$}}
