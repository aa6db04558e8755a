# interleaved(V): V chunks per stage; 8 repetitions over 2 stages x 2 chunks.
# RUN: %shardc %s --mesh 2x2 --emit ir | FileCheck %s
mesh dp, pp
let B = 8, D = 8
input x : f32[B, D] shard(dp, _)
repeat 8 as blocks over pp { x = relu(x) }
pipeline microbatches 2 schedule interleaved(2)
output x
# CHECK: {{^}}mesh dp = 2, pp = 2{{$}}
# CHECK-NEXT: {{^}}pipeline over pp repeats 8 microbatches 2 schedule interleaved(2){{$}}
# CHECK-NEXT: {{^}}%x = input
# CHECK-NEXT: {{^}}%blocks.0.x = relu %x : f32[8, 8] rep 0{{$}}
# CHECK: {{^}}%blocks.7.x = relu %blocks.6.x : f32[8, 8] rep 7{{$}}
# CHECK-NEXT: {{^}}output "x" = %blocks.7.x{{$}}
