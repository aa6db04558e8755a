# RUN: %expect 1 %shardc %s --mesh 2 -o %t.plan 2>&1 | FileCheck %s
# RUN: test ! -e %t.plan
# A comparison gives bool values; arithmetic on them asks for a cast.
mesh dp
input x : f32[8, 4] shard(dp, _)
m = x > 0.5
y = m + m
output y
# CHECK: {{^}}{{.*}}bool-arithmetic.sh:7:7: error: '+' of bool is not supported (cast it first, e.g. cast(x, f32)){{$}}
# CHECK-NEXT: {{^}}y = m + m{{$}}
