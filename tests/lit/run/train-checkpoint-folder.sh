# The checkpoint folder: a save into a folder of the user's deletes none of
# the user's files; --resume takes the step folder the pointer names, or a
# step folder named directly, or a folder saved before step folders
# (version 1, its index at its top), and without a pointer the newest
# complete step folder, saying so on stderr; a step folder whose name and
# index disagree is refused (exit 1).
# RUN: %shardc %S/train-tp.model --mesh 2x2 -o %t.plan
# RUN: mkdir %t.user && echo mine > %t.user/notes.txt && mkdir %t.user/data
# RUN: %shardrun %t.plan --steps 4 --save-every 1 --save %t.user --keep 1 --quiet
# RUN: ls %t.user | FileCheck %s --check-prefix=USER
# USER: data
# USER-NEXT: latest
# USER-NEXT: notes.txt
# USER-NEXT: step-00000004
# USER-NOT: {{.}}
# RUN: rm %t.user/latest
# RUN: %shardrun %t.plan --resume %t.user --steps 1 2>&1 | FileCheck %s --check-prefix=NOTE
# NOTE: shardrun: note: {{.*}}.user has no pointer 'latest': resumed from the newest complete checkpoint, step-00000004
# NOTE: resumed from {{.*}}.user/step-00000004 at step 4
# RUN: mkdir %t.moved && cp -r %t.user/step-00000004 %t.moved/step-00000009
# RUN: %expect 1 %shardrun %t.plan --resume %t.moved/step-00000009 2>&1 | FileCheck %s --check-prefix=MOVED
# MOVED: shardrun: error: {{.*}}.moved/step-00000009/index.json: step 4, but the folder is named for step 9: a folder renamed or copied?
# A version 1 checkpoint (what edit_index.py makes here is what shardc
# wrote before step folders, byte for byte) resumes; a save into its folder
# adds the step folders and leaves its files.
# RUN: python3 %S/edit_index.py %t.user/step-00000004 %t.v1 "j['version'] = 1; [f.pop('rank') for f in j['files']]"
# RUN: %shardrun %t.plan --resume %t.v1 --steps 1 --save %t.v1 | FileCheck %s --check-prefix=V1
# V1: resumed from {{.*}}.v1 at step 4
# V1: checkpoint saved to {{.*}}.v1 (step 5)
# RUN: ls %t.v1 | FileCheck %s --check-prefix=V1FILES
# V1FILES: index.json
# V1FILES-NEXT: latest
# V1FILES-NEXT: rank-00000.safetensors
# V1FILES: rank-00003.safetensors
# V1FILES-NEXT: step-00000005
# RUN: %shardrun %t.plan --resume %t.v1 --steps 1 | FileCheck %s --check-prefix=V1NEXT
# V1NEXT: resumed from {{.*}}.v1/step-00000005 at step 5
# RUN: %expect 2 %shardrun %t.plan --keep 2 2>&1 | FileCheck %s --check-prefix=KEEPUSE
# KEEPUSE: shardrun: error: --keep needs --save DIR
# RUN: %expect 2 %shardrun %t.plan --save %t.k --keep 0 2>&1 | FileCheck %s --check-prefix=KEEP0
# KEEP0: shardrun: error: --keep '0': expected 1 to 1000000
