# An id outside the vocabulary of a table split along it, or a label
# outside the classes of logits split along them, fails as it does
# unsplit, with the same message (the split ops look up only their rank's
# rows: check_ids and check_labels stand for the unsplit ops' own checks),
# in the forward step and before the gradient's, and at the same place in
# the model: the embedding's and the cross_entropy's line and column.
# RUN: %shardc %s --mesh 1 -o %t.1.plan
# RUN: %shardc %s --mesh 2 -o %t.2.plan
# RUN: python3 %S/../../tools/make_st.py %t.ids ids=I32[2,2]:3,64,1,0 t=I32[2,2]:1
# RUN: %expect 1 %shardrun %t.1.plan --inputs %t.ids 2>&1 | FileCheck %s --check-prefix=IDS
# RUN: %expect 1 %shardrun %t.2.plan --inputs %t.ids 2>&1 | FileCheck %s --check-prefix=IDS
# RUN: python3 %S/../../tools/make_st.py %t.lab ids=I32[2,2]:1 t=I32[2,2]:0,1,2,-5
# RUN: %expect 1 %shardrun %t.1.plan --inputs %t.lab 2>&1 | FileCheck %s --check-prefix=LAB
# RUN: %expect 1 %shardrun %t.2.plan --inputs %t.lab 2>&1 | FileCheck %s --check-prefix=LAB
# RUN: %shardc %s --mesh 2 --emit sharded-ir | FileCheck %s --check-prefix=IR
mesh tp
input ids : i32[2, 2]
input t   : i32[2, 2]
param wte : f32[64, 4] shard(tp, _) = normal(0.02)
param wlm : f32[4, 64] shard(_, tp) = normal(0.02)
loss = cross_entropy(embedding(wte, ids) @ wlm, t)
output loss
train loss with sgd(lr = 0.1)
# IDS: shardrun: error: rank {{[01]}}: {{.*}}vocab-parallel-out-of-range.sh:21:22: instruction {{[0-9]+}} ({{embedding|check_ids}}): embedding id 64 at index 1 is outside the table's 64 rows
# LAB: shardrun: error: rank {{[01]}}: {{.*}}vocab-parallel-out-of-range.sh:21:8: instruction {{[0-9]+}} ({{cross_entropy|check_labels}}): cross_entropy label -5 at index 3 is outside the 64 classes (0..63)
# IR: check_ids %ids {bound = 64}
# IR: check_labels %t {bound = 64}
