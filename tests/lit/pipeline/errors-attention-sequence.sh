# A pipeline cuts the batch (dim 0 of the inputs) into microbatches; when
# attention's queries are 2-D, dim 0 is their sequence, which attention
# mixes across rows, so each microbatch would attend only to its own rows.
# The split is refused at the attention (it once ran, wrong: max abs err
# 4.48 against the unpipelined program).
# RUN: %expect 1 %shardc %s --mesh 2 -o %t.plan 2>&1 | FileCheck %s
# RUN: test ! -e %t.plan
# CHECK: errors-attention-sequence.sh:[[@LINE+5]]:{{[0-9]+}}: error: cannot pipeline {{.*}}q, k and v must all hold the batch in a leading dimension, before the sequence
mesh pp
input x : f32[8, 4]
param w : f32[4, 4] = normal(0.5)
h = x
repeat 2 as layers over pp { h = h + attention(h @ w, h, h, causal = false) }
pipeline microbatches 2 schedule gpipe
output h
