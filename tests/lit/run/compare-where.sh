# Comparisons, bool and where (LANGUAGE.md §12) against a plain-Python
# reference: every comparison of x with a threshold that ties some of its
# elements, NaN against itself and a number, a bool input broadcast as
# where's condition, i32 picked, casts to and from bool; then one SGD step
# whose gradient goes through where to the branch each element picked.
# From 1 rank and from 4 (x split over dp and tp), to the bit.
# RUN: python3 %s.py inputs %t.in
# RUN: %shardc %s --mesh 1x1 -o %t.1.plan
# RUN: %shardc %s --mesh 2x2 -o %t.4.plan
# RUN: %shardrun %t.1.plan --quiet --inputs %t.in --outputs %t.1.out --save-params %t.1.par
# RUN: %shardrun %t.4.plan --quiet --inputs %t.in --outputs %t.4.out --save-params %t.4.par
# RUN: python3 %s.py check %t.1.out %t.1.par | FileCheck %s
# RUN: python3 %s.py check %t.4.out %t.4.par | FileCheck %s
# CHECK: ceq: 24 values exact
# CHECK-NEXT: cge: 24 values exact
# CHECK-NEXT: cgt: 24 values exact
# CHECK-NEXT: cle: 24 values exact
# CHECK-NEXT: clt: 24 values exact
# CHECK-NEXT: cne: 24 values exact
# CHECK-NEXT: fb: 24 values exact
# CHECK-NEXT: iw: 24 values exact
# CHECK-NEXT: nan: 8 values exact
# CHECK-NEXT: w: 6 values exact
# CHECK-NEXT: y: 24 values exact
mesh dp, tp
input x   : f32[4, 6] shard(dp, tp)
input m   : bool[6]
input ids : i32[4, 6] shard(dp, _)
input z   : f32[4]
param w   : f32[6] = ones
clt = x < 0.5
cle = x <= 0.5
cgt = x > 0.5
cge = x >= 0.5
ceq = x == 0.5
cne = x != 0.5
nan = concat([z != z, z == 1.0], axis = 0)
fb  = cast(cast(x, bool) == m, f32)
iw  = where(ids > 1, ids, -1)
y   = where(m, x * w, 2.0 * w)
loss = sum(y)
output clt, cle, cgt, cge, ceq, cne, nan, fb, iw, y
train loss with sgd(lr = 0.125)
