# Indexing, concat and split (LANGUAGE.md §12) against a plain-Python
# reference, to the bit (they move elements): from 1 rank and from 4, with
# x split over dp and tp along dims that are then sliced or joined, so the
# compiler gathers them first (--explain-sharding says why); an i32 tensor
# sliced and joined as well.
# RUN: python3 %s.py inputs %t.in
# RUN: %shardc %s --mesh 1x1 -o %t.1.plan
# RUN: %shardc %s --mesh 2x2 -o %t.4.plan
# RUN: %shardrun %t.1.plan --quiet --inputs %t.in --outputs %t.1.out
# RUN: %shardrun %t.4.plan --quiet --inputs %t.in --outputs %t.4.out
# RUN: python3 %s.py check %t.1.out | FileCheck %s
# RUN: python3 %s.py check %t.4.out | FileCheck %s
# RUN: %shardc %s --mesh 2x2 --explain-sharding | FileCheck %s --check-prefix=SH
# CHECK: a: 8 values exact
# CHECK-NEXT: b: 48 values exact
# CHECK-NEXT: c: 192 values exact
# CHECK-NEXT: d: 288 values exact
# CHECK-NEXT: e: 128 values exact
# CHECK-NEXT: f: 6 values exact
# CHECK-NEXT: n: 10 values exact
# SH: %0 = auto(dp, _, _) # forward from %x through narrow; dim 1 whole: it is sliced (gathered where it was split)
# SH: %b = auto(tp, _) # forward from %2 through reshape
# SH: %c = auto(dp, tp, _) # forward from %3 and %4 through concat
# SH: # collectives and slices
# SH-NEXT: all_gather over tp (line 32, 192 bytes per rank): %x (dp, tp, _) -> (dp, _, _) for narrow (a slice reads its dim whole
# SH-NEXT: all_gather over dp (line 33, 192 bytes per rank): %x (dp, tp, _) -> (_, tp, _) for narrow (a slice reads its dim whole
# SH-NEXT: all_gather over tp (line 39, 12 bytes per rank): %ids (tp) -> (_) for narrow
# SH-NOT: all_gather
mesh dp, tp
input x : f32[4, 6, 8] shard(dp, tp, _)
input ids : i32[6] shard(tp)
a = x[:, 1:3, -1]
b = x[-4]
c = concat([x[:, :, 5:], x[:, :, :-3]], axis = -1)
p, q, r = split(x, [2, 2, 4], axis = 2)
d = concat([p, q, r, p, q], axis = 2)
e = concat([x[:, 4:], x[:, :2]], axis = 1) * 1.0
f = x[3, -100:100, 7]
n = concat([ids[1:4], ids[:], ids[5:]], axis = 0)
output a, b, c, d, e, f, n
