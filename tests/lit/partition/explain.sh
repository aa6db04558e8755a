# --explain-sharding answers "why is this collective here?": for each value
# its sharding and the annotation or rule that decided it; for each
# collective or slice, the op that needed it, the sharding change, the rule
# behind the operand, and its bytes per rank.
# RUN: %shardc %s --mesh 2 --explain-sharding | FileCheck %s
mesh tp
let B = 64, D = 1024, H = 4 * D
input  x  : f32[B, D] shard(tp, _)
input  z  : f32[B, D]
param  w1 : f32[D, H] shard(_, tp) = normal(0.02)
param  w2 : f32[H, D] shard(tp, _) = normal(0.02)
out = gelu(x @ w1) @ w2 shard(tp, _)
r = relu(out)
s = r shard(_, tp)
t = z shard(tp, _)
output s, t
# CHECK: # shardings of the logical program
# CHECK-NEXT: %x = shard(tp, _)  # annotation
# CHECK-NEXT: %z = auto(_, _)  # replicated: no annotation or rule reaches it
# CHECK-NEXT: %w1 = shard(_, tp)  # annotation
# CHECK-NEXT: %w2 = shard(tp, _)  # annotation
# CHECK-NEXT: %0 = auto(_, tp)  # forward from %x and %w1 through matmul; dropped tp from the M dim: the N dim has it, and gathering %x costs less than gathering %w1
# CHECK-NEXT: %1 = auto(_, tp)  # forward from %0 through gelu
# CHECK-NEXT: %out = shard(tp, _)  # annotation
# CHECK-NEXT: %r = auto(tp, _)  # forward from %out through relu
# CHECK-NEXT: %s = shard(_, tp)  # annotation
# CHECK-NEXT: %t = shard(tp, _)  # annotation
# CHECK-NEXT: # collectives and slices of the partitioned program (per rank)
# CHECK-NEXT: all_gather over tp (line 12, 131072 bytes per rank): %x (tp, _) -> (_, _) for matmul (the left operand of '@' follows its result; %x has its sharding by: annotation)
# CHECK-NEXT: reduce_scatter over tp (line 12, 131072 bytes per rank): %out (_, _) partial(tp) -> (tp, _) for matmul (the result's sharding, by: annotation; contracting the dim split over tp, the product partial: 131072 bytes per rank, against 8650752 for contracting the dim whole, which moves an annotated operand (8388608 bytes))
# CHECK-NEXT: all_to_all over tp (line 14, 65536 bytes per rank): %r (tp, _) -> (_, tp) for constrain (a sharding constraint; %r has its sharding by: forward from %out through relu)
# CHECK-NEXT: slice over tp (line 15, 0 bytes per rank): %z (_, _) -> (tp, _) for constrain (a sharding constraint; %z has its sharding by: replicated: no annotation or rule reaches it)
