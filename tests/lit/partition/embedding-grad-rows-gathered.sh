# The token embedding's gradient with its rows split along the sequence
# over tp (sequence parallelism): gathering the rows, 4x8x64 floats, moves
# fewer bytes than all-reducing the [512, 64] table's gradient over tp, so
# the rows are gathered over tp. Over dp, the batch, the table's gradient
# is summed over ranks as every param's is.
# RUN: %shardc %s --mesh 2x4 --explain-sharding | FileCheck %s
# CHECK: all_gather over tp (line {{[0-9]+}}, {{[0-9]+}} bytes per rank): {{.*}} (dp, tp, _) -> (dp, _, _) for embedding_grad (rows gathered where that moves fewer bytes than summing the table's gradient over ranks
# CHECK: all_reduce over dp (line {{[0-9]+}}, {{[0-9]+}} bytes per rank): {{.*}} partial(dp) -> (_, _) for embedding_grad
# CHECK-NOT: all_reduce over dp tp
mesh dp, tp
input ids : i32[4, 8] shard(dp, tp)
input t : f32[4, 8, 64] shard(dp, tp, _)
param table : f32[512, 64] = normal(0.02)
e = embedding(table, ids) shard(dp, tp, _)
loss = mse(tanh(e), t)
train loss with sgd(lr = 0.1)
