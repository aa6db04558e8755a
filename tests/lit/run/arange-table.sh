# arange(N) is i32[N], 0 .. N-1, on any mesh: a table of angles made from
# it (rotary embeddings' pos * freq), its cos and sin, and x rotated by
# them, split over dp and tp; the values against Python's math within 1e-6
# (f32), and the same bytes from 1 rank and from 4.
# RUN: python3 %S/../../tools/make_st.py %t.in x=F32[2,8,4]:1
# RUN: %shardc %s --mesh 1x1 -o %t.1.plan
# RUN: %shardc %s --mesh 2x2 -o %t.4.plan
# RUN: %shardrun %t.1.plan --quiet --inputs %t.in --outputs %t.1.out
# RUN: %shardrun %t.4.plan --quiet --inputs %t.in --outputs %t.4.out
# RUN: cmp %t.1.out %t.4.out
# RUN: python3 %s.py %t.4.out | FileCheck %s
# CHECK: ids [0, 1, 2, 3, 4, 5, 6, 7]
# CHECK-NEXT: c: 32 values within 1e-06 of cos(0.5 i j)
# CHECK-NEXT: y: 64 values within 1e-06 of cos(0.5 i j) + sin(0.5 i j)
mesh dp, tp
let S = 8, D = 4
input x : f32[2, S, D] shard(dp, tp, _)
ids = arange(S)
pos = cast(ids, f32)
freq = cast(arange(D), f32) * 0.5
ang = reshape(pos, [S, 1]) * reshape(freq, [1, D])
c = cos(ang) shard(tp, _)
y = x * c + x * sin(ang)
output ids, c, y
