# input/param/output with shardings: replicated `_`, one axis, the tuple
# (dp, tp) splitting one dimension over both axes (dp major), no annotation.
# RUN: %shardc %s --mesh 2x2 --emit ir | FileCheck %s
mesh dp, tp
let B = 8, D = 16
input  x : f32[B, D]    shard((dp, tp), _)
input  m : bf16[B, 4, D] shard(_, _, (tp, dp))
input  s : f32[]
input  ids : i32[B]     shard(dp)
input  u : f16[B, D]
param  w : f32[D, D]    shard(dp, tp) = normal(0.02)
param  b : f32[D]       shard(_)      = uniform(-0.5, 0.5)
param  g : f32[D]                     = ones
param  z : f32[D, D]    shard(tp, _)
output x, w, s
# CHECK: {{^}}mesh dp = 2, tp = 2{{$}}
# CHECK-NEXT: {{^}}%x = input {name = "x"} : f32[8, 16] shard((dp, tp), _){{$}}
# CHECK-NEXT: {{^}}%m = input {name = "m"} : bf16[8, 4, 16] shard(_, _, (tp, dp)){{$}}
# CHECK-NEXT: {{^}}%s = input {name = "s"} : f32[]{{$}}
# CHECK-NEXT: {{^}}%ids = input {name = "ids"} : i32[8] shard(dp){{$}}
# CHECK-NEXT: {{^}}%u = input {name = "u"} : f16[8, 16]{{$}}
# CHECK-NEXT: {{^}}%w = param {name = "w", init = normal(0.02)} : f32[16, 16] shard(dp, tp){{$}}
# CHECK-NEXT: {{^}}%b = param {name = "b", init = uniform(-0.5, 0.5)} : f32[16] shard(_){{$}}
# CHECK-NEXT: {{^}}%g = param {name = "g", init = ones} : f32[16]{{$}}
# CHECK-NEXT: {{^}}%z = param {name = "z", init = none} : f32[16, 16] shard(tp, _){{$}}
# CHECK-NEXT: {{^}}output "x" = %x{{$}}
# CHECK-NEXT: {{^}}output "w" = %w{{$}}
# CHECK-NEXT: {{^}}output "s" = %s{{$}}
# CHECK-NOT: {{.}}
