# dropout (LANGUAGE.md §12) against plain Python: each element's bits are
# runtime/plan/plan.h's rt_dropout_bits of the key (the state rng.seed,
# which shardrun saves with the params, plus the step times 1000003), the
# dropout's tag (0 and 1 here, in program order) and its index in the
# whole tensor; a dropped element is 0, the others x / (1 - p). After two
# steps the outputs are the second step's: its own bits. From 1 rank and
# from 4 (x split over dp and tp, so the bits come from global indices),
# and pipelined over 2 stages with 2 microbatches (rows offset by the
# microbatch). The gradient through dropout has the same bits: w after the
# steps, to f32 rounding (the loss sum(h * h); a gradient the same in
# every row is tests/diff/regress/pipeline-per-step-rows.sh's). Without
# `train` dropout is the identity.
# RUN: python3 %s.py inputs %t.in
# RUN: %shardc %s --mesh 1x1 -o %t.1.plan
# RUN: %shardc %s --mesh 2x2 -o %t.4.plan
# RUN: sed -e 's/^mesh dp, tp$/mesh dp, tp, pp/' -e 's/^repeat 1 as layers {/repeat 2 as layers over pp {/' -e 's/^train /pipeline microbatches 2 schedule 1f1b\ntrain /' %s > %t.pp.sh
# RUN: %shardc %t.pp.sh --mesh 1x1x2 -o %t.pp.plan
# RUN: %shardrun %t.1.plan --quiet --steps 2 --inputs %t.in --outputs %t.1.out --save-params %t.1.par
# RUN: %shardrun %t.4.plan --quiet --steps 2 --inputs %t.in --outputs %t.4.out --save-params %t.4.par
# RUN: %shardrun %t.pp.plan --quiet --steps 2 --inputs %t.in --outputs %t.pp.out --save-params %t.pp.par
# RUN: python3 %s.py check %t.1.out %t.1.par 1 | FileCheck %s
# RUN: python3 %s.py check %t.4.out %t.4.par 1 | FileCheck %s
# RUN: python3 %s.py check %t.pp.out %t.pp.par 2 | FileCheck %s
# CHECK: a: 48 values, {{[0-9]+}} dropped (within 3 sd of 12): exact
# CHECK-NEXT: b: 48 values, {{[0-9]+}} dropped (within 3 sd of 24): exact
# CHECK-NEXT: w: within 1e-06
# RUN: sed '/^train /d' %s > %t.inf.sh
# RUN: %shardc %t.inf.sh --mesh 2x2 -o %t.inf.plan
# RUN: %shardrun %t.inf.plan --quiet --inputs %t.in --outputs %t.inf.out
# RUN: python3 %s.py identity %t.inf.out | FileCheck %s --check-prefix=INF
# INF: a: the input, exact
# INF-NEXT: b: the input, exact
mesh dp, tp
input x : f32[8, 6] shard(dp, tp)
param w : f32[6] = ones
a = dropout(x * w, 0.25)
b = dropout(x * w, 0.5)
h = a + b
repeat 1 as layers {
    h = h * 1.0
}
loss = sum(h * h)
output a, b, loss
train loss with sgd(lr = 1e-4)
