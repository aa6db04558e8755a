# The pass pipeline's options (docs/passes.md). --print-after prints each
# named pass's result to stderr under a header, in the list's order, and
# the plan is still made; fuse runs only for a plan with kernels.
# RUN: %shardc %s --mesh 2x2 --arch none --print-after=all -o %t.plan 2> %t.err
# RUN: test -s %t.plan
# RUN: grep '^// ---- after' %t.err | FileCheck %s --check-prefix=ALL
# ALL:      // ---- after autodiff ----
# ALL-NEXT: // ---- after simplify ----
# ALL-NEXT: // ---- after input-init ----
# ALL-NEXT: // ---- after propagate ----
# ALL-NEXT: // ---- after partition ----
# ALL-NEXT: // ---- after pipeline-split ----
# ALL-NEXT: // ---- after bucket ----
# ALL-NEXT: // ---- after verify ----
# ALL-NEXT: // ---- after memplan ----
# RUN: %shardc %s --mesh 2x2 --arch none --print-after=propagate,memplan --emit sharded-ir \
# RUN:   2>&1 > /dev/null | FileCheck %s --check-prefix=TWO
# TWO:      // ---- after propagate ----
# TWO-NEXT: mesh dp = 2, tp = 2
# TWO:      %h = gelu %0 : f32[8, 64] auto(dp, tp)
# TWO:      // ---- after memplan ----
# TWO-NEXT: # memory plan: arena {{[0-9]+}} bytes per rank
# TWO-NOT:  // ---- after
#
# --stop-after prints what the pass made as IR that shardc reads back:
# after propagate, the training step with every sharding (--emit
# train-ir's text); and that text, through the rest of the list with
# --passes, gives the stage programs the whole compilation gives.
# RUN: %shardc %s --mesh 2x2 --stop-after=propagate -o %t.ir
# RUN: %shardc %s --mesh 2x2 --emit train-ir | diff - %t.ir
# RUN: %shardc %t.ir --passes=partition,pipeline-split,bucket,verify > %t.stages
# RUN: %shardc %s --mesh 2x2 --emit stage-ir | diff - %t.stages
#
# Bad usage: a name that is no pass (the list is given), an output asked
# of a compilation that stops early, a logical pass on partitioned IR.
# RUN: %expect 2 %shardc %s --print-after=partitoin 2>&1 | FileCheck %s --check-prefix=NAME
# NAME: shardc: error: --print-after 'partitoin': 'partitoin' is no pass (the passes: autodiff, simplify, input-init, propagate, partition, pipeline-split, bucket, matmul-parts, verify, fuse, memplan; or all)
# RUN: %expect 2 %shardc %s --stop-after=bucket --emit sharded-ir 2>&1 | FileCheck %s --check-prefix=MIX
# MIX: shardc: error: --stop-after and --passes print what the last pass made: they take no --emit, --explain-sharding, --report or --trace
# RUN: %shardc %s --mesh 2x2 --stop-after=partition -o %t.part.ir
# RUN: %expect 2 %shardc %t.part.ir --passes=propagate 2>&1 | FileCheck %s --check-prefix=LOGICAL
# LOGICAL: shardc: error: the pass propagate cannot run here: it takes a logical module, and this one is partitioned
mesh dp, tp
input x : f32[8, 32] shard(dp, _)
input y : f32[8, 32] shard(dp, _)
param w1 : f32[32, 64] shard(_, tp) = normal(0.02)
param w2 : f32[64, 32] shard(tp, _) = normal(0.02)
h = gelu(x @ w1)
loss = mse(h @ w2, y)
output loss
train loss with adamw(lr = 0.001)
