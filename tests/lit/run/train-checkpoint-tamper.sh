# Every rank file is checked against the index (its size and CRC-32)
# before the first step reads from it, and a file that fails is refused,
# naming it and what is wrong (exit 1): files swapped (named by the ranks
# whose bytes they hold), a flipped byte (in the data, or in the header),
# a file of another checkpoint of the same size, a truncated file (also in
# train-checkpoint-errors.sh). Each case damages a copy of a good step
# folder; the ranks that read the file find it (on 1x1, rank 0 reads all).
# RUN: %shardc %S/train-tp.model --mesh 2x2 -o %t.plan
# RUN: %shardc %S/train-tp.model --mesh 1x1 -o %t.1.plan
# RUN: %shardrun %t.plan --steps 4 --save-every 1 --save %t.ck --quiet
# RUN: cp -r %t.ck/step-00000004 %t.swap && mv %t.swap/rank-00000.safetensors %t.tmp && \
# RUN:   mv %t.swap/rank-00001.safetensors %t.swap/rank-00000.safetensors && mv %t.tmp %t.swap/rank-00001.safetensors
# RUN: %expect 1 %shardrun %t.1.plan --resume %t.swap 2>&1 | FileCheck %s --check-prefix=SWAP
# SWAP: shardrun: error: rank 0: {{.*}}.swap/rank-00000.safetensors: holds the bytes the index gives for rank-00001.safetensors (rank 1's file), not its own (rank 0's): files swapped or renamed
# SWAP-NOT: step
# RUN: %expect 1 %shardrun %t.plan --resume %t.swap 2>&1 | FileCheck %s --check-prefix=SWAP4
# SWAP4: shardrun: error: rank {{[01]}}: {{.*}}.swap/rank-0000{{[01]}}.safetensors: holds the bytes the index gives for rank-0000{{[01]}}.safetensors
# The last byte (data) and byte 20 (the header's JSON) of rank 1's file.
# RUN: cp -r %t.ck/step-00000004 %t.flip && python3 -c "import sys; f = open(sys.argv[1], 'r+b'); f.seek(-1, 2); b = f.read(1); f.seek(-1, 2); f.write(bytes([b[0] ^ 1]))" %t.flip/rank-00001.safetensors
# RUN: %expect 1 %shardrun %t.1.plan --resume %t.flip 2>&1 | FileCheck %s --check-prefix=FLIP
# FLIP: shardrun: error: rank 0: {{.*}}.flip/rank-00001.safetensors: CRC-32 {{[0-9a-f]+}}, but the index says {{[0-9a-f]+}}: the file is damaged or not this checkpoint's
# RUN: cp -r %t.ck/step-00000004 %t.head && python3 -c "import sys; f = open(sys.argv[1], 'r+b'); f.seek(20); b = f.read(1); f.seek(20); f.write(bytes([b[0] ^ 1]))" %t.head/rank-00001.safetensors
# RUN: %expect 1 %shardrun %t.plan --resume %t.head 2>&1 | FileCheck %s --check-prefix=HEAD
# HEAD: shardrun: error: rank 1: {{.*}}.head/rank-00001.safetensors: CRC-32 {{[0-9a-f]+}}, but the index says {{[0-9a-f]+}}: the file is damaged or not this checkpoint's
# RUN: cp -r %t.ck/step-00000004 %t.other && cp %t.ck/step-00000003/rank-00000.safetensors %t.other/
# RUN: %expect 1 %shardrun %t.1.plan --resume %t.other 2>&1 | FileCheck %s --check-prefix=OTHER
# OTHER: shardrun: error: rank 0: {{.*}}.other/rank-00000.safetensors: CRC-32 {{[0-9a-f]+}}, but the index says {{[0-9a-f]+}}: the file is damaged or not this checkpoint's
# RUN: cp -r %t.ck/step-00000004 %t.short && truncate -s 400 %t.short/rank-00000.safetensors
# RUN: %expect 1 %shardrun %t.1.plan --resume %t.short 2>&1 | FileCheck %s --check-prefix=SHORT
# SHORT: shardrun: error: rank 0: {{.*}}.short/rank-00000.safetensors: 400 bytes, but the index says 452: the file is truncated or not this checkpoint's
# The good folder still resumes on both meshes.
# RUN: %shardrun %t.1.plan --resume %t.ck --steps 1 | FileCheck %s --check-prefix=GOOD
# GOOD: resumed from {{.*}}.ck/step-00000004 at step 4
