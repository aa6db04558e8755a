# Inputs with a leading step dimension: an inputs file whose x is
# f32[5, 8, 4] for the plan's f32[8, 4] holds 5 batches, and step k reads
# batch k (each rank only its rows of it). Five steps over such a file end
# exactly where five one-step runs end, each given batch k alone and the
# previous run's params: the same bytes. A resumed run goes on with the
# batch after the checkpoint's step.
# RUN: %shardc %S/train.model --mesh 2 -o %t.plan
# RUN: python3 %S/../../tools/make_batches.py %t.in 5 "x=F32[8,4]" "y=F32[8,4]"
# RUN: %shardrun %t.plan --steps 5 --inputs %t.in --save-params %t.all | tee %t.all.log | FileCheck %s
# CHECK: step 1/5  loss
# CHECK: step 5/5  loss
# RUN: %shardrun %t.plan --steps 1 --quiet --inputs %t.in.1 --save-params %t.p1
# RUN: %shardrun %t.plan --steps 1 --quiet --inputs %t.in.2 --params %t.p1 --save-params %t.p2
# RUN: %shardrun %t.plan --steps 1 --quiet --inputs %t.in.3 --params %t.p2 --save-params %t.p3
# RUN: %shardrun %t.plan --steps 1 --quiet --inputs %t.in.4 --params %t.p3 --save-params %t.p4
# RUN: %shardrun %t.plan --steps 1 --inputs %t.in.5 --params %t.p4 --save-params %t.p5 | grep '^step' > %t.last.log
# RUN: cmp %t.all %t.p5
# RUN: sed -n 's/^step 5\/5  loss \([0-9.]*\) .*/\1/p' %t.all.log > %t.a
# RUN: sed -n 's/^step 1\/1  loss \([0-9.]*\) .*/\1/p' %t.last.log | diff %t.a -
# Fewer batches than steps: an error before the first step.
# RUN: %expect 1 %shardrun %t.plan --steps 6 --inputs %t.in 2>&1 | FileCheck %s --check-prefix=FEW
# FEW: shardrun: error: {{.*}}.in: tensor 'x' holds 5 batches (one a step), but steps 1 to 6 need 6
# FEW-NOT: step 1/6
# Resumed at step 3, the run reads batches 4 and 5, and ends where the
# straight run does; 3 more steps would need a sixth batch.
# RUN: %shardrun %t.plan --steps 3 --quiet --inputs %t.in --save %t.ck
# RUN: %shardrun %t.plan --steps 2 --quiet --inputs %t.in --resume %t.ck --save-params %t.resumed
# RUN: cmp %t.all %t.resumed
# RUN: %expect 1 %shardrun %t.plan --steps 3 --inputs %t.in --resume %t.ck 2>&1 | FileCheck %s --check-prefix=FEW2
# FEW2: shardrun: error: {{.*}}.in: tensor 'x' holds 5 batches (one a step), but steps 4 to 6 need 6
# A tensor of neither shape is an error naming both.
# RUN: python3 %S/../../tools/make_st.py %t.bad x=F32[5,8,5]:0 y=F32[8,4]:0
# RUN: %expect 1 %shardrun %t.plan --inputs %t.bad 2>&1 | FileCheck %s --check-prefix=SHAPE
# SHAPE: shardrun: error: rank {{[01]}}: {{.*}}/train.model:4:8: instruction {{[0-9]+}} (input): {{.*}}.bad: tensor 'x': shape [5, 8, 5] in the file, [8, 4] expected
