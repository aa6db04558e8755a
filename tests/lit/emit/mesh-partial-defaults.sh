# One axis with a default, one without (size 1); the default may be a constant.
# RUN: %shardc %s --emit ir | FileCheck %s
# RUN: %shardc %s --mesh 2x2 --emit ir | FileCheck %s --check-prefix=CLI
# RUN: %shardc %s -D P=8 --emit ir | FileCheck %s --check-prefix=DEF8
let P = 4
mesh pp = P, dp
input x : f32[8, 16] shard(dp, _)
output x
# CHECK: {{^}}mesh pp = 4, dp = 1{{$}}
# CLI: {{^}}mesh pp = 2, dp = 2{{$}}
# DEF8: {{^}}mesh pp = 8, dp = 1{{$}}
