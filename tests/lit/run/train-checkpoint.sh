# --save writes a sharded checkpoint after the last step, in a step folder
# of the checkpoint folder that the pointer `latest` names: one safetensors
# file per rank, a box held by several ranks written once (w is split over
# tp only: the ranks with dp = 0 write it), and index.json. --resume loads
# it on any mesh, each rank cutting its own box out of the saved shards,
# and the step count goes on from the checkpoint's. On the saving mesh a
# resumed run repeats the straight run exactly; on 1x1 (one rank reads both
# shards of w), 4x1 and 1x4 (half a shard each) its losses agree within
# rtol 1e-5 (the same steps, summed in another order: measured equal to
# the 6 printed decimals).
# RUN: %shardc %S/train-tp.model --mesh 2x2 -o %t.2x2.plan
# RUN: %shardc %S/train-tp.model --mesh 1x1 -o %t.1x1.plan
# RUN: %shardc %S/train-tp.model --mesh 4x1 -o %t.4x1.plan
# RUN: %shardc %S/train-tp.model --mesh 1x4 -o %t.1x4.plan
# RUN: %shardrun %t.2x2.plan --steps 3 --save %t.ck/sub | FileCheck %s --check-prefix=SAVE
# SAVE: step 3/3  loss
# SAVE: checkpoint saved to {{.*}}.ck/sub (step 3)
# RUN: ls %t.ck/sub | FileCheck %s --check-prefix=FOLDER
# FOLDER: latest
# FOLDER-NEXT: step-00000003
# FOLDER-NOT: {{.}}
# RUN: cat %t.ck/sub/latest | FileCheck %s --check-prefix=POINTER
# POINTER: step-00000003
# RUN: ls %t.ck/sub/step-00000003 | FileCheck %s --check-prefix=FILES
# FILES: index.json
# FILES-NEXT: rank-00000.safetensors
# FILES-NEXT: rank-00001.safetensors
# FILES-NEXT: rank-00002.safetensors
# FILES-NEXT: rank-00003.safetensors
# FILES-NOT: tmp
# RUN: python3 -c "import json, sys; j = json.load(open(sys.argv[1])); print(j['format'], j['version'], j['step'], j['mesh']['axes'], j['mesh']['sizes']); [print(f['name'], f['rank'], f['bytes']) for f in j['files']]; [print(n, t['kind'], t['dtype'], t['shape'], '; '.join(' '.join(map(str, (s['file'], s['offset'], s['shape']))) for s in t['shards'])) for n, t in j['tensors'].items()]" %t.ck/sub/step-00000003/index.json | FileCheck %s --check-prefix=INDEX
# INDEX: shardc-checkpoint 2 3 ['dp', 'tp'] [2, 2]
# INDEX-NEXT: rank-00000.safetensors 0 452
# INDEX-NEXT: rank-00001.safetensors 1 392
# INDEX-NEXT: rank-00002.safetensors 2 16
# INDEX-NEXT: rank-00003.safetensors 3 16
# INDEX-NEXT: w param f32 [4, 8] rank-00000.safetensors [0, 0] [4, 4]; rank-00001.safetensors [0, 4] [4, 4]
# INDEX-NEXT: opt.step state f32 [] rank-00000.safetensors [] []
# INDEX-NEXT: opt.w.m state f32 [4, 8] rank-00000.safetensors [0, 0] [4, 4]; rank-00001.safetensors [0, 4] [4, 4]
# INDEX-NEXT: opt.w.v state f32 [4, 8] rank-00000.safetensors [0, 0] [4, 4]; rank-00001.safetensors [0, 4] [4, 4]
# RUN: %shardrun %t.2x2.plan --steps 5 --save-params %t.straight.st | sed -n 's/^step \([45]\/5\)  loss \([0-9.]*\) .*/\1 \2/p' > %t.straight
# RUN: %shardrun %t.2x2.plan --resume %t.ck/sub --steps 2 --save-params %t.same.st --save %t.ck2 | tee %t.same.log | FileCheck %s --check-prefix=RESUME
# RESUME: shardrun: {{.*}}: mesh dp=2, tp=2 (4 ranks, local, cpu)
# RESUME-NEXT: resumed from {{.*}}.ck/sub/step-00000003 at step 3
# RESUME-NEXT: made from seed 0: x, y
# RESUME-NEXT: step 4/5  loss
# RESUME-NEXT: step 5/5  loss
# RESUME: checkpoint saved to {{.*}}.ck2 (step 5)
# RUN: cmp %t.straight.st %t.same.st
# RUN: sed -n 's/^step \([45]\/5\)  loss \([0-9.]*\) .*/\1 \2/p' %t.same.log | diff %t.straight -
# RUN: python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['step'])" %t.ck2/step-00000005/index.json | FileCheck %s --check-prefix=STEP5
# STEP5: 5
# RUN: for m in 1x1 4x1 1x4; do %shardrun %t.$m.plan --resume %t.ck/sub --steps 2 | sed -n 's/^step \([45]\/5\)  loss \([0-9.]*\) .*/\1 \2/p' | paste %t.straight - | awk -v m=$m '{ d = $4 - $2; if ($1 != $3 || d * d > (1e-5 * $2) ^ 2) bad = 1; n++ } END { print m, n, bad ? "differ" : "agree"; exit bad }'; done | FileCheck %s --check-prefix=MESHES
# MESHES: 1x1 2 agree
# MESHES-NEXT: 4x1 2 agree
# MESHES-NEXT: 1x4 2 agree
# --save-every K saves after every K-th step too, and after the last.
# RUN: %shardrun %t.1x1.plan --steps 5 --save-every 2 --save %t.ck3 | FileCheck %s --check-prefix=EVERY
# EVERY: step 2/5
# EVERY-NEXT: checkpoint saved to {{.*}}.ck3 (step 2)
# EVERY-NEXT: step 3/5
# EVERY-NEXT: step 4/5
# EVERY-NEXT: checkpoint saved to {{.*}}.ck3 (step 4)
# EVERY-NEXT: step 5/5
# EVERY: checkpoint saved to {{.*}}.ck3 (step 5)
# Of the checkpoints of steps 2, 4 and 5, the newest 2 are kept (the
# default); with --keep 1, only the last. A step folder is resumed from by
# naming it.
# RUN: ls %t.ck3 | FileCheck %s --check-prefix=KEEP2
# KEEP2: latest
# KEEP2-NEXT: step-00000004
# KEEP2-NEXT: step-00000005
# KEEP2-NOT: {{.}}
# RUN: %shardrun %t.1x1.plan --resume %t.ck3/step-00000004 --steps 1 | FileCheck %s --check-prefix=STEP4
# STEP4: resumed from {{.*}}.ck3/step-00000004 at step 4
# RUN: %shardrun %t.1x1.plan --steps 5 --save-every 2 --save %t.ck4 --keep 1 --quiet
# RUN: ls %t.ck4 | FileCheck %s --check-prefix=KEEP1
# KEEP1: latest
# KEEP1-NEXT: step-00000005
# KEEP1-NOT: {{.}}
