# RUN: %expect 1 %shardc %s --mesh 2 -o %t.plan 2>&1 | FileCheck %s
# RUN: test ! -e %t.plan
# Comparisons do not chain (LANGUAGE.md §12): write two and combine them.
mesh dp
input x : f32[8, 4] shard(dp, _)
y = 0.0 < x < 1.0
output y
# CHECK: {{^}}{{.*}}compare-chained.sh:6:13: error: syntax error, unexpected '<'{{$}}
