# RUN: %expect 1 %shardc %s --mesh 2 -o %t.plan 2>&1 | FileCheck %s
# RUN: test ! -e %t.plan
# A param is updated by the optimizer: a mask belongs in an input.
mesh dp
param keep : bool[4] = ones
input x : f32[8, 4] shard(dp, _)
y = where(keep, x, 0.0)
output y
# CHECK: {{^}}{{.*}}bool-param.sh:5:14: error: param 'keep' is bool: a param is trained or updated, so it holds numbers (use an input for a mask){{$}}
