# one_hot, argmax, gather, cumsum and topk (LANGUAGE.md §12) against a
# plain-Python reference, exact (small integers in f32, with many ties:
# the first index of a maximum wins), from 1 rank and from 4 with x split
# over tp along the axes they reduce (a local max, then an all_reduce(max)
# of the small result), and ids out of range (one_hot's zero rows).
# RUN: python3 %s.py inputs %t.in
# RUN: %shardc %s --mesh 1x1 -o %t.1.plan
# RUN: %shardc %s --mesh 2x2 -o %t.4.plan
# RUN: %shardrun %t.1.plan --quiet --inputs %t.in --outputs %t.1.out
# RUN: %shardrun %t.4.plan --quiet --inputs %t.in --outputs %t.4.out
# RUN: python3 %s.py check %t.1.out | FileCheck %s
# RUN: python3 %s.py check %t.4.out | FileCheck %s
# RUN: %shardc %s --mesh 2x2 --explain-sharding | FileCheck %s --check-prefix=SH
# CHECK: am: 24 values exact
# CHECK-NEXT: am1: 32 values exact
# CHECK-NEXT: cs: 192 values exact
# CHECK-NEXT: g: 72 values exact
# CHECK-NEXT: i: 72 values exact
# CHECK-NEXT: oh: 120 values exact
# CHECK-NEXT: v: 72 values exact
# SH: all_reduce over tp (line 28, 48 bytes per rank): max of %amax_max (dp, _, _) partial(tp) -> (dp, _, _) for amax
# SH-NOT: all_gather
mesh dp, tp
input x : f32[4, 6, 8] shard(dp, _, tp)
input ids : i32[4, 6] shard(dp, _)
input gi : i32[4, 6, 3] shard(dp, _, _)
oh = one_hot(ids, 5)
am = argmax(x, axis = -1)
am1 = argmax(x, axis = 1)
g = gather(x, gi, axis = 2)
cs = cumsum(x, axis = 2)
v, i = topk(x, 3)
output oh, am, am1, g, cs, v, i
