# Grouped-query attention (4 query heads reading 2 key/value heads), a
# scale, an additive mask, causal and not, against a plain-Python float64
# reference within 1e-5 (f32), from 1 rank and from 4 (the batch over dp,
# the heads over tp: the 2 key/value heads stay split, each rank's query
# heads reading its own).
# RUN: python3 %s.py inputs %t.in
# RUN: %shardc %s --mesh 1x1 -o %t.1.plan
# RUN: %shardc %s --mesh 2x2 -o %t.4.plan
# RUN: %shardrun %t.1.plan --quiet --inputs %t.in --outputs %t.1.out
# RUN: %shardrun %t.4.plan --quiet --inputs %t.in --outputs %t.4.out
# RUN: python3 %s.py check %t.in %t.1.out | FileCheck %s
# RUN: python3 %s.py check %t.in %t.4.out | FileCheck %s
# RUN: %shardc %s --mesh 2x2 --explain-sharding | FileCheck %s --check-prefix=SH
# CHECK: a: 96 values within 1e-05 (causal)
# CHECK-NEXT: b: 96 values within 1e-05 (causal, scale 0.7)
# CHECK-NEXT: c: 96 values within 1e-05 (causal, scale 0.7, mask)
# CHECK-NEXT: d: 96 values within 1e-05 (mask)
# SH: = auto(dp, tp, _, _, _)  # forward from %k through reshape
# SH-NOT: all_gather
mesh dp, tp
input q : f32[2, 4, 4, 3] shard(dp, tp, _, _)
input k : f32[2, 2, 6, 3] shard(dp, tp, _, _)
input v : f32[2, 2, 6, 3] shard(dp, tp, _, _)
input m : f32[4, 6]
a = attention(q, k, v, causal = true)
b = attention(q, k, v, causal = true, scale = 0.7)
c = attention(q, k, v, causal = true, scale = 0.7, mask = m)
d = attention(q, k, v, causal = false, mask = m)
output a, b, c, d
