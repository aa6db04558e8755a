# diff: an id outside the vocabulary of a table split along it looked up a zero row on every rank (the sum of their rows) instead of failing as the unsplit embedding does
# diff-mesh: 2
# diff-mesh: 4
# diff-ids: ids 1073741824
# diff-error: is outside the table's 64 rows
mesh tp
input ids : i32[2]
param wte : f32[64, 4] shard(tp, _) = normal(0.02)
x = embedding(wte, ids)
output x
