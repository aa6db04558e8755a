# Mesh axis sizes: defaults from `mesh dp = 2, tp = 4`, replaced by --mesh.
# RUN: %shardc %s --emit ir | FileCheck %s --check-prefix=DEF
# RUN: %shardc %s --mesh 2x2 --emit ir | FileCheck %s --check-prefix=CLI
# RUN: %shardc %s --mesh 8x1 --emit ir | FileCheck %s --check-prefix=EIGHT
mesh dp = 2, tp = 4
let B = 8, D = 16
input x : f32[B, D] shard(dp, tp)
y = relu(x)
output y
# DEF: {{^}}mesh dp = 2, tp = 4{{$}}
# DEF-NEXT: %x = input {name = "x"} : f32[8, 16] shard(dp, tp)
# CLI: {{^}}mesh dp = 2, tp = 2{{$}}
# CLI-NEXT: %x = input {name = "x"} : f32[8, 16] shard(dp, tp)
# EIGHT: {{^}}mesh dp = 8, tp = 1{{$}}
