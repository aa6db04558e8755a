# An i32 input absent at run time is made from the seed as uniform(0, N),
# N set on the logical program (passes/input_init.c): the rows of the table
# its ids index, the classes of the logits its labels index, the least of
# them when it does both, through reshape and transpose. So it is the same
# on every mesh, though the partitioned program reads the labels of
# vocabulary-split logits through a comparison with the local classes and
# the microbatches of a pipeline read their rows of the ids. Float inputs
# and ids that index nothing carry no init (normal(1) and zeros).
# RUN: %shardc %s --mesh 1x1 --emit train-ir | FileCheck %s --check-prefix=INIT
# RUN: %shardc %s --mesh 2x2 --emit sharded-ir | FileCheck %s --check-prefix=INIT
# RUN: %shardc %s --mesh 2x2 --emit train-ir -o %t.ir
# RUN: %shardc %t.ir --mesh 2x2 --emit train-ir | FileCheck %s --check-prefix=INIT
# RUN: %shardc %s --mesh 2x2 --emit ir | FileCheck %s --check-prefix=LOGICAL
# RUN: sed 's/^ids = ids/ids = transpose(transpose(ids, [1, 0]), [1, 0])/; s/^both = both/both = reshape(reshape(both, [32]), [8, 4])/' %s > %t.sh
# RUN: %shardc %t.sh --mesh 2x2 --emit sharded-ir | FileCheck %s --check-prefix=INIT
mesh dp, tp
input ids : i32[8, 4] shard(dp, _)
input lab : i32[8, 4] shard(dp, _)
input both : i32[8, 4]
input other : i32[8, 4]
input x : f32[8, 4, 16] shard(dp, _, _)
param emb : f32[64, 16] shard(tp, _) = normal(0.02)
param wlm : f32[16, 32] shard(_, tp) = normal(0.02)
ids = ids
both = both
h = embedding(emb, ids) + embedding(emb, both) + x
logits = h @ wlm
loss = cross_entropy(logits, lab) + cross_entropy(logits, both)
output loss, other
train loss with sgd(lr = 0.1)
# INIT: {{^}}%ids = input {name = "ids", init = uniform(0.0, 64.0)} : i32[{{[0-9]+}}, 4] shard(dp, _){{$}}
# INIT-NEXT: {{^}}%lab = input {name = "lab", init = uniform(0.0, 32.0)} : i32[{{[0-9]+}}, 4] shard(dp, _){{$}}
# INIT-NEXT: {{^}}%both = input {name = "both", init = uniform(0.0, 32.0)} : i32[{{[0-9]+}}, 4] {{.*}}{{$}}
# INIT-NEXT: {{^}}%other = input {name = "other"} : i32[8, 4] {{.*}}{{$}}
# INIT-NEXT: {{^}}%x = input {name = "x"} : f32[{{[0-9]+}}, 4, 16] shard(dp, _, _){{$}}
# LOGICAL: {{^}}%ids = input {name = "ids"} : i32[8, 4] shard(dp, _){{$}}
