# amax over a dim split over tp: the local amax, then an all_reduce with
# max over tp of one element per row (instead of gathering the dim).
# RUN: %shardc %s --mesh 2x2 --emit sharded-ir | FileCheck %s --check-prefix=IR
# RUN: %shardc %s --mesh 2x2 --report json | FileCheck %s --check-prefix=JSON
# RUN: %shardc %s --mesh 2x2 --explain-sharding | FileCheck %s --check-prefix=WHY
# RUN: %shardc %s --mesh 2x2 --emit sharded-ir > %t.ir
# RUN: %shardc %t.ir --emit ir | FileCheck %s --check-prefix=IR
mesh dp, tp
input  x : f32[8, 16] shard(dp, tp)
m = amax(x, axis = 1)
k = amax(x, axis = -1, keepdims = true)
output m, k
# IR:      %m_max = amax %x {axis = 1, keepdims = false} : f32[4] auto(dp) partial(tp)
# IR-NEXT: %m = all_reduce %m_max {axes = [tp], reduce = max} : f32[4] auto(dp)
# IR-NEXT: %k_max = amax %x {axis = 1, keepdims = true} : f32[4, 1] auto(dp, _) partial(tp)
# IR-NEXT: %k = all_reduce %k_max {axes = [tp], reduce = max} : f32[4, 1] auto(dp, _)
# IR-NOT:  all_gather
# JSON: "bytes_sent": 32, "collectives": [{"kind": "all_reduce", "axes": ["tp"], "dtype": "f32", "elements": 4, "reduce": "max", "phase": "forward"}, {"kind": "all_reduce", "axes": ["tp"], "dtype": "f32", "elements": 4, "reduce": "max", "phase": "forward"}]}]}
# WHY: # collectives and slices of the partitioned program (per rank)
# WHY-NEXT: all_reduce over tp (line 10, 16 bytes per rank): max of %m_max (dp) partial(tp) -> (dp) for amax (the max over the split dim; the max taken locally, then over ranks: 16 bytes per rank against 128 for gathering it)
# WHY-NEXT: all_reduce over tp (line 11, 16 bytes per rank): max of %k_max (dp, _) partial(tp) -> (dp, _) for amax (the max over the split dim; the max taken locally, then over ranks: 16 bytes per rank against 128 for gathering it)
