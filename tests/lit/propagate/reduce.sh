# Reductions: the reduced dim leaves the sharding; a reduction over a split
# dim is partial, resolved by all_reduce (mean scaled by its share); amax
# over an unsplit dim needs nothing.
# RUN: %shardc %s --mesh 2x2 --explain-sharding | FileCheck %s
mesh dp, tp
input  x : f32[8, 16, 4] shard(dp, tp, _)
s = sum(x, axis = 1)
m = mean(x, axis = 0, keepdims = true)
a = amax(x, axis = -1)
output s, m, a
# CHECK: # shardings of the logical program
# CHECK-NEXT: %x = shard(dp, tp, _)  # annotation
# CHECK-NEXT: %s = auto(dp, _)  # forward from %x through sum
# CHECK-NEXT: %m = auto(_, tp, _)  # forward from %x through mean
# CHECK-NEXT: %a = auto(dp, tp)  # forward from %x through amax
# CHECK-NEXT: # collectives and slices of the partitioned program (per rank)
# CHECK-NEXT: all_reduce over tp (line 7, 64 bytes per rank): %s (dp, _) partial(tp) -> (dp, _) for sum (the result's sharding, by: forward from %x through sum)
# CHECK-NEXT: all_reduce over dp (line 8, 128 bytes per rank): %m (_, tp, _) partial(dp) -> (_, tp, _) for mean (the result's sharding, by: forward from %x through mean)
