# The gradient of a vocabulary-split table (training): it takes the
# table's sharding (tp, _), and each rank adds into its 128 rows only the
# rows of dy whose ids fall in its range (dy masked, the ids checked
# against the whole vocabulary as the unsplit op checks them, then made
# local);
# the gradient is then partial only over dp (the batch), an all_reduce of
# the local 128 x 32 rows, never the whole table's 256 x 32 nor a
# reduce_scatter over tp. On 1x2 nothing moves at all.
# RUN: %shardc %s --mesh 2x2 --bucket-mb 0 --emit sharded-ir | FileCheck %s --check-prefix=IR
# RUN: %shardc %s --mesh 2x2 --bucket-mb 0 --report json | FileCheck %s --check-prefix=JSON
# RUN: %shardc %s --mesh 1x2 --bucket-mb 0 --report json | FileCheck %s --check-prefix=TP
mesh dp, tp
input  ids    : i32[4, 16] shard(dp, _)
input  target : f32[4, 16, 32] shard(dp, _, _)
param  wte    : f32[256, 32] shard(tp, _) = normal(0.02)
e = embedding(wte, ids)
loss = mse(e, target)
output loss
train loss with sgd(lr = 0.1)
# IR:      check_ids %ids {bound = 256} : i32[2, 16] auto(dp, _) phase backward
# IR-NEXT: %embedding_grad_rows = iota {shape = [256]} : i32[256] auto(_) phase backward
# IR-NEXT: slice %embedding_grad_rows {dim = 0, axes = [tp]} : i32[128] auto(tp) phase backward
# IR:      %[[IN:[0-9]+]] = mul %{{[0-9]+}}, %{{[0-9]+}} : i32[2, 16] auto(dp, _) partial(tp) phase backward
# IR-NEXT: %[[ROW:[0-9]+]] = mul %{{[0-9]+}}, %[[IN]] : i32[2, 16] auto(dp, _) partial(tp) phase backward
# IR-NEXT: %[[MF:[0-9]+]] = cast %[[IN]] {dtype = f32} : f32[2, 16] auto(dp, _) partial(tp) phase backward
# IR-NEXT: %[[MR:[0-9]+]] = reshape %[[MF]] {shape = [2, 16, 1]} : f32[2, 16, 1] auto(dp, _, _) partial(tp) phase backward
# IR-NEXT: %[[DY:[0-9]+]] = mul %{{[0-9]+}}, %[[MR]] : f32[2, 16, 32] auto(dp, _, _) partial(tp) phase backward
# IR-NEXT: %[[G:[0-9]+]] = embedding_grad %[[ROW]], %[[DY]] {shape = [128, 32]} : f32[128, 32] auto(tp, _) partial(dp) phase backward
# IR-NEXT: %{{[0-9]+}} = all_reduce %[[G]] {axes = [dp]} : f32[128, 32] auto(tp, _) phase backward
# IR-NOT:  reduce_scatter
# JSON: "collectives": [{"kind": "all_reduce", "axes": ["tp"], "dtype": "f32", "elements": 1024, "phase": "forward"}, {"kind": "all_reduce", "axes": ["dp"], "dtype": "f32", "elements": 1, "phase": "forward"}, {"kind": "all_reduce", "axes": ["dp"], "dtype": "f32", "elements": 4096, "phase": "backward"}]}]}
# TP: "collectives": [{"kind": "all_reduce", "axes": ["tp"], "dtype": "f32", "elements": 2048, "phase": "forward"}]}]}
