# RUN: %expect 1 %shardc %s --mesh 2 -o %t.plan 2>&1 | FileCheck %s
# RUN: test ! -e %t.plan
# A comparison of two numbers has nothing to compare at run time.
mesh dp
let N = 4
input x : f32[8, 4] shard(dp, _)
y = where(N > 2, x, 0.0)
output y
# CHECK: {{^}}{{.*}}compare-numbers.sh:7:13: error: '>' compares two numbers: a comparison needs a tensor on one side{{$}}
