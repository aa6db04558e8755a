# recompute block (LANGUAGE.md §12): the backward runs each call's forward
# again instead of keeping its intermediate values, so training gives the
# same bits as the same model without `recompute` (on 1 rank and on 4),
# the report's activations shrink (336264 to 188808 bytes per rank on
# 2x2) and its FLOPs grow by the forward run again.
# RUN: sed 's/^recompute block/block/' %s > %t.plain.sh
# RUN: %shardc %s --mesh 1x1 -o %t.r1.plan
# RUN: %shardc %t.plain.sh --mesh 1x1 -o %t.p1.plan
# RUN: %shardc %s --mesh 2x2 -o %t.r4.plan
# RUN: %shardc %t.plain.sh --mesh 2x2 -o %t.p4.plan
# RUN: %shardrun %t.r1.plan --steps 3 --seed 3 --quiet --save-params %t.r1.st
# RUN: %shardrun %t.p1.plan --steps 3 --seed 3 --quiet --save-params %t.p1.st
# RUN: %shardrun %t.r4.plan --steps 3 --seed 3 --quiet --save-params %t.r4.st
# RUN: %shardrun %t.p4.plan --steps 3 --seed 3 --quiet --save-params %t.p4.st
# RUN: cmp %t.r1.st %t.p1.st
# RUN: cmp %t.r4.st %t.p4.st
# RUN: %shardc %s --mesh 2x2 --report | FileCheck %s --check-prefix=R
# RUN: %shardc %t.plain.sh --mesh 2x2 --report | FileCheck %s --check-prefix=P
# RUN: %shardc %s --mesh 2x2 --emit ir | FileCheck %s --check-prefix=IR
# R: flops per rank: 9318338
# R: activations 189576 (the most live at once)
# P: flops per rank: 7665602
# P: activations 337032 (the most live at once)
# IR: %layers.0.mlp.h = rmsnorm %x, %layers.0.mlp.g {eps = 1e-06} : f32[8, 16, 32] recompute 1
# IR: %layers.2.mlp.h = rmsnorm {{.*}} recompute 3
mesh dp, tp
let B = 8, S = 16, D = 32, F = 128
input x : f32[B, S, D] shard(dp, _, _)
input y : f32[B, S, D] shard(dp, _, _)
recompute block mlp(x : f32[B, S, D]) -> f32[B, S, D] {
    param g : f32[D] = ones
    param w1 : f32[D, F] shard(_, tp) = normal(0.2)
    param w2 : f32[F, D] shard(tp, _) = normal(0.1)
    h = rmsnorm(x, g)
    return tanh(gelu(h @ w1) * sigmoid(h @ w1)) @ w2
}
repeat 3 as layers {
    x = x + mlp(x)
}
loss = mse(x, y)
output loss
train loss with adamw(lr = 0.01)
