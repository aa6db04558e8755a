# softmax over a dim split over tp: local amax -> all_reduce max -> sub,
# exp -> local sum -> all_reduce sum -> div, the result split as its
# operand, one element per row in each all_reduce. Propagation keeps the
# split only where those bytes are fewer than gathering the dim: %y (a
# local dim of 2, 64 bytes either way) is a tie, broken towards gathering,
# and %z (1 column a rank) is cheaper to gather; --explain-sharding says so.
# RUN: %shardc %s --mesh 2x2 --emit sharded-ir | FileCheck %s --check-prefix=IR
# RUN: %shardc %s --mesh 2x2 --report json | FileCheck %s --check-prefix=JSON
# RUN: %shardc %s --mesh 2x2 --explain-sharding | FileCheck %s --check-prefix=WHY
mesh dp, tp
input  x : f32[8, 16] shard(dp, tp)
input  y : f32[8, 4] shard(_, tp)
input  z : f32[8, 2] shard(_, tp)
p = softmax(x)
q = softmax(y)
r = softmax(z)
output p, q, r
# IR:      %p_max = amax %x {axis = 1, keepdims = true} : f32[4, 1] auto(dp, _) partial(tp)
# IR-NEXT: %[[M:[0-9]+]] = all_reduce %p_max {axes = [tp], reduce = max} : f32[4, 1] auto(dp, _)
# IR-NEXT: %[[Z:[0-9]+]] = sub %x, %[[M]] : f32[4, 8] auto(dp, tp)
# IR-NEXT: %[[E:[0-9]+]] = exp %[[Z]] : f32[4, 8] auto(dp, tp)
# IR-NEXT: %p_sum = sum %[[E]] {axis = 1, keepdims = true} : f32[4, 1] auto(dp, _) partial(tp)
# IR-NEXT: %[[S:[0-9]+]] = all_reduce %p_sum {axes = [tp]} : f32[4, 1] auto(dp, _)
# IR-NEXT: %p = div %[[E]], %[[S]] : f32[4, 8] auto(dp, tp)
# IR-NEXT: %[[Y:[0-9]+]] = all_gather %y {dim = 1, axes = [tp]} : f32[8, 4] shard(_, _)
# IR-NEXT: %q = softmax %[[Y]] {axis = 1} : f32[8, 4] auto(_, _)
# IR-NEXT: %[[ZZ:[0-9]+]] = all_gather %z {dim = 1, axes = [tp]} : f32[8, 2] shard(_, _)
# IR-NEXT: %r = softmax %[[ZZ]] {axis = 1} : f32[8, 2] auto(_, _)
# JSON: "bytes_sent": 128, "collectives": [{"kind": "all_reduce", "axes": ["tp"], "dtype": "f32", "elements": 4, "reduce": "max", "phase": "forward"}, {"kind": "all_reduce", "axes": ["tp"], "dtype": "f32", "elements": 4, "phase": "forward"}, {"kind": "all_gather", "axes": ["tp"], "dtype": "f32", "elements": 32, "phase": "forward"}, {"kind": "all_gather", "axes": ["tp"], "dtype": "f32", "elements": 16, "phase": "forward"}]}]}
# WHY:      %p = auto(dp, tp)  # forward from %x through softmax; dim 1 split over tp: partial statistics (32 bytes per rank) cost less than gathering it (128)
# WHY-NEXT: %q = auto(_, _)  # forward from %y through softmax; dim 1 whole: gathering it over tp (64 bytes per rank) costs the same as partial statistics (64) (tie broken)
# WHY-NEXT: %r = auto(_, _)  # forward from %z through softmax; dim 1 whole: gathering it over tp (32 bytes per rank) costs less than partial statistics (64)
# WHY-NEXT: # collectives and slices of the partitioned program (per rank)
# WHY-NEXT: all_reduce over tp (line 14, 16 bytes per rank): max of %p_max (dp, _) partial(tp) -> (dp, _) for softmax (the row max over the split dim; the dim split, statistics all-reduced: 32 bytes per rank against 128 for gathering it)
# WHY-NEXT: all_reduce over tp (line 14, 16 bytes per rank): %p_sum (dp, _) partial(tp) -> (dp, _) for softmax (the row sum of exp over the split dim; the dim split, statistics all-reduced: 32 bytes per rank against 128 for gathering it)
# WHY-NEXT: all_gather over tp (line 15, 64 bytes per rank): %y (_, tp) -> (_, _) for softmax (the dim whole: gathering costs 64 bytes per rank, no more than partial statistics; %y has its sharding by: annotation)
# WHY-NEXT: all_gather over tp (line 16, 32 bytes per rank): %z (_, tp) -> (_, _) for softmax (the dim whole: gathering costs 32 bytes per rank, no more than partial statistics; %z has its sharding by: annotation)
