# softmax, layernorm and rmsnorm keep their input's sharding, gains and
# biases get the last dim backward; the partitioner computes them with the
# normalised dim whole (all_gather) and slices the result back.
# RUN: %shardc %s --mesh 2x2 --explain-sharding | FileCheck %s
mesh dp, tp
input  x : f32[8, 16] shard(dp, tp)
param  g : f32[16] = ones
param  b : f32[16] = zeros
y = layernorm(x, g, b)
p = softmax(x)
r = rmsnorm(x, g)
output y, p, r
# CHECK: # shardings of the logical program
# CHECK-NEXT: %x = shard(dp, tp)  # annotation
# CHECK-NEXT: %g = auto(tp)  # backward from %r through rmsnorm (operand g)
# CHECK-NEXT: %b = auto(tp)  # backward from %y through layernorm (operand b)
# CHECK-NEXT: %y = auto(dp, tp)  # forward from %x through layernorm
# CHECK-NEXT: %p = auto(dp, tp)  # forward from %x through softmax
# CHECK-NEXT: %r = auto(dp, tp)  # forward from %x through rmsnorm
# CHECK-NEXT: # collectives and slices of the partitioned program (per rank)
# CHECK-NEXT: all_gather over tp (line 9, 128 bytes per rank): %x (dp, tp) -> (dp, _) for layernorm (the normalised dim whole; %x has its sharding by: annotation)
# CHECK-NEXT: all_gather over tp (line 9, 32 bytes per rank): %g (tp) -> (_) for layernorm (gains and biases whole; %g has its sharding by: backward from %r through rmsnorm (operand g))
# CHECK-NEXT: all_gather over tp (line 9, 32 bytes per rank): %b (tp) -> (_) for layernorm (gains and biases whole; %b has its sharding by: backward from %y through layernorm (operand b))
# CHECK-NEXT: slice over tp (line 9, 0 bytes per rank): %y (dp, _) -> (dp, tp) for layernorm (the result's sharding, by: forward from %x through layernorm)
# CHECK-NEXT: all_gather over tp (line 10, 128 bytes per rank): %x (dp, tp) -> (dp, _) for softmax (the normalised dim whole; %x has its sharding by: annotation)
# CHECK-NEXT: slice over tp (line 10, 0 bytes per rank): %p (dp, _) -> (dp, tp) for softmax (the result's sharding, by: forward from %x through softmax)
# CHECK-NEXT: all_gather over tp (line 11, 128 bytes per rank): %x (dp, tp) -> (dp, _) for rmsnorm (the normalised dim whole; %x has its sharding by: annotation)
# CHECK-NEXT: all_gather over tp (line 11, 32 bytes per rank): %g (tp) -> (_) for rmsnorm (gains and biases whole; %g has its sharding by: backward from %r through rmsnorm (operand g))
# CHECK-NEXT: slice over tp (line 11, 0 bytes per rank): %r (dp, _) -> (dp, tp) for rmsnorm (the result's sharding, by: forward from %x through rmsnorm)
