# embedding: leading dims from the ids, the last from the table's D;
# attention: batch and heads from q, k and v follow backward. No
# collective is needed.
# RUN: %shardc %s --mesh 2x2 --explain-sharding | FileCheck %s
mesh dp, tp
input  ids : i32[4, 16] shard(dp, _)
param  table : f32[64, 32] shard(_, tp) = zeros
input  q : f32[4, 8, 16, 8] shard(dp, tp, _, _)
input  k : f32[4, 8, 16, 8]
input  v : f32[4, 8, 16, 8]
e = embedding(table, ids)
a = attention(q, k, v)
output e, a
# CHECK: # shardings of the logical program
# CHECK-NEXT: %ids = shard(dp, _)  # annotation
# CHECK-NEXT: %table = shard(_, tp)  # annotation
# CHECK-NEXT: %q = shard(dp, tp, _, _)  # annotation
# CHECK-NEXT: %k = auto(dp, tp, _, _)  # backward from %a through attention (operand k)
# CHECK-NEXT: %v = auto(dp, tp, _, _)  # backward from %a through attention (operand v)
# CHECK-NEXT: %e = auto(dp, _, tp)  # forward from %table and %ids through embedding
# CHECK-NEXT: %a = auto(dp, tp, _, _)  # forward from %q through attention
# CHECK-NEXT: # collectives and slices of the partitioned program (per rank)
