# RUN: %expect 1 %shardc %s --mesh 2 -o %t.plan 2>&1 | FileCheck %s
# RUN: test ! -e %t.plan
# where picks by a bool condition, not by a number tensor's truth.
mesh dp
input x : f32[8, 4] shard(dp, _)
y = where(x, x, 0.0)
output y
# CHECK: {{^}}{{.*}}where-condition.sh:6:5: error: where needs a bool condition, got f32[8, 4] (compare it, e.g. x > 0, or cast it to bool){{$}}
