# A sum's all-reduces as one (passes/join_sums.c, run by the bucket pass):
# clip's norm adds one sum of squares a param, and the partitioner
# all-reduces each sum that a split gradient leaves partial before adding
# it to the whole running total. Here the partial sums reduced over the
# same axes are added first and all-reduced once.
# 1x2: w1, b1 and w2 split over tp, b2 whole between them: one all-reduce
# over tp, where there were two (the partitioner keeps the add of w1's and
# b1's sums partial, but all-reduces it to add b2's, and w2's after).
# RUN: %shardc %s --mesh 1x2 --stop-after=bucket | FileCheck %s --check-prefix=TP
# TP:      %[[W1:[0-9]+]] = sum %{{[0-9]+}} {axis = 0, keepdims = false} : f32[] auto() partial(tp) phase optimizer
# TP-NEXT: %{{[0-9]+}} = mul
# TP-NEXT: %[[B1:[0-9]+]] = sum %{{[0-9]+}} {axis = 0, keepdims = false} : f32[] auto() partial(tp) phase optimizer
# TP-NEXT: %[[P:[0-9]+]] = add %[[W1]], %[[B1]] : f32[] auto() partial(tp) phase optimizer
# TP:      %[[B2:[0-9]+]] = sum %{{[0-9]+}} {axis = 0, keepdims = false} : f32[] auto() phase optimizer
# TP:      %[[W2:[0-9]+]] = sum %{{[0-9]+}} {axis = 0, keepdims = false} : f32[] auto() partial(tp) phase optimizer
# TP-NEXT: %[[P2:[0-9]+]] = add %[[P]], %[[W2]] : f32[] auto() partial(tp) phase optimizer
# TP-NEXT: %[[R:[0-9]+]] = all_reduce %[[P2]] {axes = [tp]} : f32[] auto() phase optimizer
# TP-NEXT: %[[T:[0-9]+]] = add %[[R]], %[[B2]] : f32[] auto() phase optimizer
# TP-NEXT: sqrt %[[T]] : f32[] auto() phase optimizer
# TP-NOT:  all_reduce
# ZeRO 2 on 2x2: every gradient a slice over dp, w1's all-reduced over
# dp then over tp (one over both now), b2's partial over dp alone. Five
# all-reduces of 4 bytes become two.
# RUN: %shardc %s --mesh 2x2 --zero 2 --stop-after=bucket | FileCheck %s --check-prefix=ZERO
# ZERO:      %[[W1:[0-9]+]] = sum %{{[0-9]+}} {axis = 0, keepdims = false} : f32[] auto() partial(dp, tp) phase optimizer
# ZERO:      %[[B1:[0-9]+]] = sum %{{[0-9]+}} {axis = 0, keepdims = false} : f32[] auto() partial(dp, tp) phase optimizer
# ZERO:      %[[B2:[0-9]+]] = sum %{{[0-9]+}} {axis = 0, keepdims = false} : f32[] auto() partial(dp) phase optimizer
# ZERO:      %[[W2:[0-9]+]] = sum %{{[0-9]+}} {axis = 0, keepdims = false} : f32[] auto() partial(dp, tp) phase optimizer
# ZERO-NEXT: %[[P:[0-9]+]] = add %[[W1]], %[[B1]] : f32[] auto() partial(dp, tp) phase optimizer
# ZERO-NEXT: %[[P2:[0-9]+]] = add %[[P]], %[[W2]] : f32[] auto() partial(dp, tp) phase optimizer
# ZERO-NEXT: %[[R:[0-9]+]] = all_reduce %[[P2]] {axes = [dp, tp]} : f32[] auto() phase optimizer
# ZERO-NEXT: %[[R2:[0-9]+]] = all_reduce %[[B2]] {axes = [dp]} : f32[] auto() phase optimizer
# ZERO-NEXT: %[[T:[0-9]+]] = add %[[R]], %[[R2]] : f32[] auto() phase optimizer
# ZERO-NEXT: sqrt %[[T]] : f32[] auto() phase optimizer
# ZERO-NOT:  all_reduce {{.*}} f32[] auto()
# The same with tp of one rank, where the partitioner's all-reduce over
# tp is a constrain: every sum partial over dp, and the whole norm one
# all-reduce, the tree's last add become it.
# RUN: %shardc %s --mesh 2x1 --zero 2 --stop-after=bucket | FileCheck %s --check-prefix=ONE
# ONE:      %[[W1:[0-9]+]] = sum %{{[0-9]+}} {axis = 0, keepdims = false} : f32[] auto() partial(dp, tp) phase optimizer
# ONE:      %[[B1:[0-9]+]] = sum %{{[0-9]+}} {axis = 0, keepdims = false} : f32[] auto() partial(dp, tp) phase optimizer
# ONE:      %[[B2:[0-9]+]] = sum %{{[0-9]+}} {axis = 0, keepdims = false} : f32[] auto() partial(dp) phase optimizer
# ONE:      %[[W2:[0-9]+]] = sum %{{[0-9]+}} {axis = 0, keepdims = false} : f32[] auto() partial(dp, tp) phase optimizer
# ONE-NEXT: %[[P:[0-9]+]] = add %[[W1]], %[[B1]] : f32[] auto() partial(dp, tp) phase optimizer
# ONE-NEXT: %[[P2:[0-9]+]] = add %[[P]], %[[B2]] : f32[] auto() partial(dp, tp) phase optimizer
# ONE-NEXT: %[[P3:[0-9]+]] = add %[[P2]], %[[W2]] : f32[] auto() partial(dp, tp) phase optimizer
# ONE-NEXT: %[[T:[0-9]+]] = all_reduce %[[P3]] {axes = [dp, tp]} : f32[] auto() phase optimizer
# ONE-NEXT: sqrt %[[T]] : f32[] auto() phase optimizer
# ONE-NOT:  constrain {{.*}} f32[] auto() phase optimizer
# A sum of an all-reduce is the all-reduce of the sum: moe.sh's expert
# weights, split over dp, had their squares' [64] column sums all-reduced
# over dp before the last sum; now that sum is of the partial values and
# its scalar joins the others. Two all-reduces of 4 bytes for the norm,
# none of a vector.
# RUN: %shardc %S/../../../../examples/moe.sh --mesh 2x2 -D S=16 -D D=64 -D F=64 -D L=1 --stop-after=bucket | FileCheck %s --check-prefix=MOE
# MOE-NOT: all_reduce {{.*}}f32[{{[0-9]+}}{{.*}} phase optimizer
# MOE:     all_reduce %{{[0-9]+}} {axes = [tp]} : f32[] auto() phase optimizer
# MOE:     all_reduce %{{[0-9]+}} {axes = [dp, tp]} : f32[] auto() phase optimizer
# MOE-NOT: all_reduce {{.*}} phase optimizer
# That the sharded steps train as PyTorch's and the unsharded one do is
# train/mlp/clip-*, train/llama/* and train/moe/* (tests/CMakeLists.txt).
mesh dp, tp
input  x  : f32[8, 16]   shard(dp, _)
input  y  : f32[8, 16]   shard(dp, _)
param  w1 : f32[16, 32]  shard(_, tp)   = normal(0.02)
param  b1 : f32[32]      shard(tp)      = zeros
param  b2 : f32[16]                     = zeros
param  w2 : f32[32, 16]  shard(tp, _)   = normal(0.02)
out  = gelu(x @ w1 + b1) @ w2 + b2
loss = mse(out, y)
output loss
train loss with sgd(lr = 0.01, clip = 1.0)
