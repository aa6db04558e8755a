# Causal attention with the queries split along their sequence dim: each
# rank holds a block of the query rows, so the mask must use their global
# rows, not the local ones. The partitioner hands the local attention the
# positions of its rows (iota over S sliced at the rank's coordinate, as
# for vocabulary-parallel class ids), plus T - S where the keys are longer
# (the mask aligned to the end by the global S and T); keys and values are
# gathered along T. Without the split (or without causal) nothing is added.
# The gradient's ops (attention's backward without the [S, T]
# probabilities, passes/attn_grad.c) get the same positions, made again
# for the backward; since they are made alike (the same iota and slice),
# the statistics come from the forward: attn_lse beside it with the
# forward's positions, attn_delta of its result. dv, a sum over the split
# query rows, is partial and all-reduced.
# RUN: %shardc %s --mesh 2x2 --emit sharded-ir | FileCheck %s
# RUN: %shardc %s --mesh 2x2 --explain-sharding | FileCheck %s --check-prefix=WHY
# RUN: %shardc %s --mesh 2x2 --emit sharded-ir | FileCheck %s --check-prefix=GRAD
mesh a, b
input q  : f32[8, 4] shard(a, _)
input k  : f32[8, 4]
input v  : f32[8, 4]
input q2 : f32[2, 4, 4] shard(_, (a, b), _)
input kv : f32[2, 12, 4] shard(_, a, _)
param w  : f32[4, 4] = normal(0.5)
o = attention(q @ w, k, v, causal = true)
o2 = attention(q2, kv, kv, causal = true)
o3 = attention(q, k, v, causal = false)
loss = mse(o, q)
output o, o2, o3
train loss with sgd(lr = 0.1)
# CHECK:      %o_pos = iota {shape = [8]} : i32[8] auto(_)
# CHECK-NEXT: %[[P:[0-9]+]] = slice %o_pos {dim = 0, axes = [a]} : i32[4] auto(a)
# CHECK-NEXT: %o = attention %[[Q:[0-9]+]], %k, %v, %[[P]] {causal = true} : f32[4, 4] auto(a, _)
# CHECK-NEXT: %[[L:[0-9]+]] = attn_lse %[[Q]], %k, %[[P]] {causal = true} : f32[4] auto(a)
# CHECK:      %[[K:[0-9]+]] = all_gather %kv {dim = 1, axes = [a]} : f32[2, 12, 4] shard(_, _, _)
# CHECK:      %o2_pos = iota {shape = [4]} : i32[4] auto(_)
# CHECK-NEXT: %[[P2:[0-9]+]] = slice %o2_pos {dim = 0, axes = [a, b]} : i32[1] auto((a, b))
# CHECK-NEXT: %[[TS:[0-9]+]] = const {value = 8.0} : i32[] auto()
# CHECK-NEXT: %[[A2:[0-9]+]] = add %[[P2]], %[[TS]] : i32[1] auto((a, b))
# CHECK-NEXT: %o2 = attention %q2, %[[K]], %{{[0-9]+}}, %[[A2]] {causal = true} : f32[2, 1, 4] auto(_, (a, b), _)
# CHECK-NEXT: %o3 = attention %q, %k, %v {causal = false} : f32[4, 4] auto(a, _)
# WHY: slice over a (line 24, 0 bytes per rank): %o_pos (_) -> (a) for attention (the global query rows this rank holds, for the causal mask)
# WHY: slice over a b (line 25, 0 bytes per rank): %o2_pos (_) -> ((a, b)) for attention (the global query rows this rank holds, for the causal mask)
# GRAD:      %attn_probs_pos = iota {shape = [8]} : i32[8] auto(_) phase backward
# GRAD-NEXT: %[[GP:[0-9]+]] = slice %attn_probs_pos {dim = 0, axes = [a]} : i32[4] auto(a) phase backward
# GRAD-NEXT: %[[ST:[0-9]+]] = attn_delta %o, %{{[0-9]+}}, %{{[0-9]+}} : f32[4, 2] auto(a, _) phase backward
# GRAD-NEXT: %[[DV:[0-9]+]] = attn_dv %{{[0-9]+}}, %k, %{{[0-9]+}}, %[[ST]], %[[GP]] {causal = true} : f32[8, 4] auto(_, _) partial(a) phase backward
# GRAD-NEXT: %{{[0-9]+}} = all_reduce %[[DV]] {axes = [a]} : f32[8, 4] auto(_, _) phase backward
# GRAD-NEXT: %{{[0-9]+}} = attn_dq %{{[0-9]+}}, %k, %v, %{{[0-9]+}}, %[[ST]], %[[GP]] {causal = true} : f32[4, 4] auto(a, _) phase backward
# GRAD-NOT: attn_probs
