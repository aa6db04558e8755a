# A mesh without sizes: --mesh gives them; without --mesh every axis has size 1.
# RUN: %shardc %s --mesh 2x2 --emit ir | FileCheck %s
# RUN: %shardc %s --emit ir | FileCheck %s --check-prefix=ONE
mesh dp, tp
let B = 8, D = 16
input x : f32[B, D] shard(dp, _)
output x
# CHECK: {{^}}mesh dp = 2, tp = 2{{$}}
# CHECK-NEXT: %x = input {name = "x"} : f32[8, 16] shard(dp, _)
# CHECK-NEXT: output "x" = %x
# ONE: {{^}}mesh dp = 1, tp = 1{{$}}
