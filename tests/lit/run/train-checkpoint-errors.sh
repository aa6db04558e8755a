# A checkpoint that does not fit the plan, or is damaged, is refused before
# the first step, with the file and the tensor named (exit 1); each case is
# a good checkpoint's step folder, copied, with one thing changed
# (tests/lit/run/edit_index.py).
# RUN: %shardc %S/train-tp.model --mesh 2x2 -o %t.plan
# RUN: %shardc %S/train-tp.model --mesh 1x1 -o %t.1.plan
# RUN: %shardrun %t.plan --steps 3 --quiet --save %t.ck
# RUN: %expect 1 %shardrun %t.1.plan --resume %t.none --quiet 2>&1 | FileCheck %s --check-prefix=NOINDEX
# NOINDEX: shardrun: error: {{.*}}.none: no such checkpoint folder
# RUN: cp -r %t.ck/step-00000003 %t.half && rm %t.half/index.json
# RUN: %expect 1 %shardrun %t.1.plan --resume %t.half --quiet 2>&1 | FileCheck %s --check-prefix=HALF
# HALF: shardrun: error: {{.*}}.half: not a checkpoint: no pointer 'latest', no index.json and no complete step folder (a save into it that did not complete?)
# RUN: python3 %S/edit_index.py %t.ck %t.format "j['format'] = 'safetensors-index'"
# RUN: %expect 1 %shardrun %t.1.plan --resume %t.format --quiet 2>&1 | FileCheck %s --check-prefix=FORMAT
# FORMAT: shardrun: error: {{.*}}.format/index.json: format "safetensors-index", not "shardc-checkpoint"
# RUN: python3 %S/edit_index.py %t.ck %t.version "j['version'] = 3"
# RUN: %expect 1 %shardrun %t.1.plan --resume %t.version --quiet 2>&1 | FileCheck %s --check-prefix=VERSION
# VERSION: shardrun: error: {{.*}}.version/index.json: version 3 is newer: this build reads versions 1 to 2
# RUN: printf '{"format": "shardc-checkpoint", ' > %t.json && mkdir %t.json.d && mv %t.json %t.json.d/index.json
# RUN: %expect 1 %shardrun %t.1.plan --resume %t.json.d --quiet 2>&1 | FileCheck %s --check-prefix=JSON
# JSON: shardrun: error: {{.*}}.json.d/index.json:1:32: not valid JSON here (byte 31)
# A whole index with more after it (two saves' text in one file, a NUL
# byte) is refused at the first byte after its object and its whitespace.
# RUN: cp -r %t.ck/step-00000003 %t.tail && printf '\n  }\n' >> %t.tail/index.json
# RUN: %expect 1 %shardrun %t.1.plan --resume %t.tail --quiet 2>&1 | FileCheck %s --check-prefix=TAIL
# TAIL: shardrun: error: {{.*}}.tail/index.json:{{[0-9]+}}:3: text after the JSON object (byte {{[0-9]+}})
# RUN: cp -r %t.ck/step-00000003 %t.nul && printf '\0' >> %t.nul/index.json
# RUN: %expect 1 %shardrun %t.1.plan --resume %t.nul --quiet 2>&1 | FileCheck %s --check-prefix=NUL
# NUL: shardrun: error: {{.*}}.nul/index.json:{{[0-9]+}}:{{[0-9]+}}: text after the JSON object
# RUN: python3 %S/edit_index.py %t.ck %t.missing "del j['tensors']['opt.w.v']"
# RUN: %expect 1 %shardrun %t.1.plan --resume %t.missing --quiet 2>&1 | FileCheck %s --check-prefix=MISSING
# MISSING: shardrun: error: {{.*}}.missing/index.json: the checkpoint has no state 'opt.w.v', which the plan has
# RUN: python3 %S/edit_index.py %t.ck %t.extra "j['tensors']['b'] = j['tensors']['w']"
# RUN: %expect 1 %shardrun %t.1.plan --resume %t.extra --quiet 2>&1 | FileCheck %s --check-prefix=EXTRA
# EXTRA: shardrun: error: {{.*}}.extra/index.json: the checkpoint has 'b', which the plan does not (a checkpoint of another model or optimizer?)
# RUN: python3 %S/edit_index.py %t.ck %t.kind "j['tensors']['w']['kind'] = 'state'"
# RUN: %expect 1 %shardrun %t.1.plan --resume %t.kind --quiet 2>&1 | FileCheck %s --check-prefix=KIND
# KIND: shardrun: error: {{.*}}.kind/index.json: tensor 'w' is a state in the checkpoint, a param in the plan
# RUN: python3 %S/edit_index.py %t.ck %t.dtype "j['tensors']['w']['dtype'] = 'bf16'"
# RUN: %expect 1 %shardrun %t.1.plan --resume %t.dtype --quiet 2>&1 | FileCheck %s --check-prefix=DTYPE
# DTYPE: shardrun: error: {{.*}}.dtype/index.json: tensor 'w': dtype bf16 in the checkpoint, f32 in the plan
# RUN: python3 %S/edit_index.py %t.ck %t.shape "j['tensors']['w']['shape'] = [4, 16]"
# RUN: %expect 1 %shardrun %t.1.plan --resume %t.shape --quiet 2>&1 | FileCheck %s --check-prefix=SHAPE
# SHAPE: shardrun: error: {{.*}}.shape/index.json: tensor 'w': shape [4, 16] in the checkpoint, [4, 8] in the plan
# RUN: python3 %S/edit_index.py %t.ck %t.outside "j['tensors']['w']['shards'][1]['offset'] = [0, 6]"
# RUN: %expect 1 %shardrun %t.1.plan --resume %t.outside --quiet 2>&1 | FileCheck %s --check-prefix=OUTSIDE
# OUTSIDE: shardrun: error: {{.*}}.outside/index.json: tensor 'w': shard 1: the box at [0, 6] of shape [4, 4] is outside the tensor's shape [4, 8]
# RUN: python3 %S/edit_index.py %t.ck %t.gap "del j['tensors']['opt.w.m']['shards'][1]"
# RUN: %expect 1 %shardrun %t.1.plan --resume %t.gap --quiet 2>&1 | FileCheck %s --check-prefix=GAP
# GAP: shardrun: error: rank 0: {{.*}}.gap/index.json: tensor 'opt.w.m': the shards do not cover the block at [0, 0] of shape [4, 8]
# A gap that only some ranks' boxes touch is found by those ranks.
# RUN: %expect 1 %shardrun %t.plan --resume %t.gap --quiet 2>&1 | FileCheck %s --check-prefix=GAP2
# GAP2: shardrun: error: rank 1: {{.*}}.gap/index.json: tensor 'opt.w.m': the shards do not cover the block at [0, 4] of shape [4, 4]
# RUN: python3 %S/edit_index.py %t.ck %t.overlap "j['tensors']['w']['shards'].append(j['tensors']['w']['shards'][0])"
# RUN: %expect 1 %shardrun %t.1.plan --resume %t.overlap --quiet 2>&1 | FileCheck %s --check-prefix=OVERLAP
# OVERLAP: shardrun: error: rank 0: {{.*}}.overlap/index.json: tensor 'w': shards 0 and 2 overlap (at [0, 0])
# RUN: python3 %S/edit_index.py %t.ck %t.unlisted "j['tensors']['w']['shards'][0]['file'] = 'rank-00009.safetensors'"
# RUN: %expect 1 %shardrun %t.1.plan --resume %t.unlisted --quiet 2>&1 | FileCheck %s --check-prefix=UNLISTED
# UNLISTED: shardrun: error: {{.*}}.unlisted/index.json: tensor 'w': shard 0: file "rank-00009.safetensors" is not in "files"
# RUN: python3 %S/edit_index.py %t.ck %t.escape "j['files'][0]['name'] = '../rank-00000.safetensors'"
# RUN: %expect 1 %shardrun %t.1.plan --resume %t.escape --quiet 2>&1 | FileCheck %s --check-prefix=ESCAPE
# ESCAPE: shardrun: error: {{.*}}.escape/index.json: file 0: name "../rank-00000.safetensors" is not a file name in the folder
# RUN: cp -r %t.ck/step-00000003 %t.gone && rm %t.gone/rank-00001.safetensors
# RUN: %expect 1 %shardrun %t.1.plan --resume %t.gone --quiet 2>&1 | FileCheck %s --check-prefix=GONE
# GONE: shardrun: error: rank 0: {{.*}}.gone/rank-00001.safetensors: cannot open: No such file or directory (it holds a shard of 'w')
# Only the ranks that read a file open it: on 2x2, rank 1 (tp = 1).
# RUN: %expect 1 %shardrun %t.plan --resume %t.gone --quiet 2>&1 | FileCheck %s --check-prefix=GONE2
# GONE2: shardrun: error: rank 1: {{.*}}.gone/rank-00001.safetensors: cannot open
# RUN: cp -r %t.ck/step-00000003 %t.short && truncate -s 300 %t.short/rank-00000.safetensors
# RUN: %expect 1 %shardrun %t.1.plan --resume %t.short --quiet 2>&1 | FileCheck %s --check-prefix=SHORT
# SHORT: shardrun: error: rank 0: {{.*}}.short/rank-00000.safetensors: 300 bytes, but the index says 452: the file is truncated or not this checkpoint's
# RUN: python3 %S/edit_index.py %t.ck %t.moved "j['tensors']['w']['shards'][1]['file'] = 'rank-00002.safetensors'"
# RUN: %expect 1 %shardrun %t.1.plan --resume %t.moved --quiet 2>&1 | FileCheck %s --check-prefix=MOVED
# MOVED: shardrun: error: rank 0: {{.*}}.moved/rank-00002.safetensors: no tensor 'w', which the index puts there
# RUN: %expect 2 %shardrun %t.1.plan --resume %t.ck --params %t.w 2>&1 | FileCheck %s --check-prefix=BOTH
# BOTH: shardrun: error: --resume and --params both give the params: use one
# RUN: %expect 2 %shardrun %t.1.plan --save-every 2 2>&1 | FileCheck %s --check-prefix=EVERY
# EVERY: shardrun: error: --save-every needs --save DIR
# Saving where a file stands in the way fails before the first step,
# naming it.
# RUN: touch %t.file
# RUN: %expect 1 %shardrun %t.1.plan --quiet --save %t.file/ck 2>&1 | FileCheck %s --check-prefix=NODIR
# NODIR: shardrun: error: --save {{.*}}.file/ck cannot be written: {{.*}}.file is not a folder
