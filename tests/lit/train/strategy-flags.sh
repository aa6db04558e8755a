# The strategy from the command line over the model file's (one file, every
# strategy): each flag gives the plan of the file edited to say the same,
# byte for byte in the report, and each misuse is an error naming the flag.
# RUN: sed 's/^\(train .*\)$/\1 zero 2 over dp/' %S/../../../examples/transformer.sh > %t.zero2.sh
# RUN: %shardc %S/../../../examples/transformer.sh --mesh 4x1 --zero 2 --report > %t.flag
# RUN: %shardc %t.zero2.sh --mesh 4x1 --report > %t.file
# RUN: diff %t.flag %t.file
# RUN: %shardc %t.zero2.sh --mesh 4x1 --zero 0 --report > %t.flag0
# RUN: %shardc %S/../../../examples/transformer.sh --mesh 4x1 --report > %t.file0
# RUN: diff %t.flag0 %t.file0
# RUN: %shardc %S/../../../examples/transformer.sh --mesh 2x2 --zero 1:tp --report > %t.flagtp
# RUN: sed 's/^\(train .*\)$/\1 zero 1 over tp/' %S/../../../examples/transformer.sh > %t.zerotp.sh
# RUN: %shardc %t.zerotp.sh --mesh 2x2 --report | diff - %t.flagtp
# RUN: sed 's/^pipeline microbatches 4 schedule .*$/pipeline microbatches 2 schedule gpipe/' %S/../../../examples/pipeline.sh > %t.gpipe.sh
# RUN: %shardc %S/../../../examples/pipeline.sh --mesh 1x2x1 --schedule gpipe --microbatches 2 --emit schedule > %t.sflag
# RUN: %shardc %t.gpipe.sh --mesh 1x2x1 --emit schedule | diff - %t.sflag
# RUN: FileCheck %s --check-prefix=SCHED < %t.sflag
# --dtype bf16: the same plan as the file with every f32 written bf16
# RUN: sed 's/\bf32\b/bf16/g' %S/../../../examples/llama.sh > %t.bf16.sh
# RUN: %shardc %S/../../../examples/llama.sh --mesh 2x2 --dtype bf16 --report > %t.dflag
# RUN: %shardc %t.bf16.sh --mesh 2x2 --report | diff - %t.dflag
# one_hot's f32 is --dtype's type too, as a written f32 (moe.sh's routing
# multiplies its one-hots by the bf16 gate probabilities)
# RUN: %shardc %S/../../../examples/moe.sh --mesh 2x2 --dtype bf16 --emit ir | FileCheck %s --check-prefix=ONEHOT
# ONEHOT: %layers.0.moe.m1 = cast %{{[0-9]+}} {dtype = bf16} : bf16[8, 64, 4]
# ONEHOT: %layers.0.moe.d1 = mul %{{[0-9]+}}, %{{[0-9]+}} : bf16[8, 64, 4, 40]
# RUN: %shardc %S/../../../examples/moe.sh --mesh 2x2 --emit ir | FileCheck %s --check-prefix=ONEHOT32
# ONEHOT32: %layers.0.moe.m1 = cast %{{[0-9]+}} {dtype = f32} : f32[8, 64, 4]
# RUN: %expect 2 %shardc %S/../../../examples/mlp.sh --mesh 2x2 --dtype i32 -o %t.plan 2>&1 | FileCheck %s --check-prefix=DTYPE
# DTYPE: shardc: error: --dtype 'i32': expected bf16, f16 or f32
# --recompute: the same plan as every `block` written `recompute block`
# RUN: sed 's/^block /recompute block /' %S/../../../examples/transformer.sh > %t.rc.sh
# RUN: %shardc %S/../../../examples/transformer.sh --mesh 2x2 --recompute --report > %t.rflag
# RUN: %shardc %t.rc.sh --mesh 2x2 --report | diff - %t.rflag
# RUN: %shardc %S/../../../examples/transformer.sh --mesh 2x2 --report > %t.rplain
# RUN: %expect 1 diff %t.rplain %t.rflag > %t.rdiff
# RUN: FileCheck %s --check-prefix=RC < %t.rdiff
# RC: <   flops per rank: 6088778754
# RC: >   flops per rank: 7715120130
# RC: <     activations 25243648 (the most live at once)
# RC: >     activations 8433664 (the most live at once)
# --keep-gathered: with nothing gathered (data parallel), the same plan;
# without `train`, an error naming the flag
# RUN: %shardc %S/../../../examples/transformer.sh --mesh 4x1 --keep-gathered --report > %t.kflag
# RUN: %shardc %S/../../../examples/transformer.sh --mesh 4x1 --report | diff - %t.kflag
# RUN: sed '/^train /d' %S/../../../examples/mlp.sh > %t.infer.sh
# RUN: %expect 1 %shardc %t.infer.sh --mesh 2x2 --keep-gathered -o %t.plan 2>&1 | FileCheck %s --check-prefix=KEEP
# RUN: %expect 1 %shardc %S/../../../examples/mlp.sh --mesh 2x2 --schedule 1f1b -o %t.plan 2>&1 | FileCheck %s --check-prefix=NOPIPE
# RUN: %expect 1 %shardc %S/../../../examples/pipeline.sh --mesh 1x2x1 --microbatches 3 -o %t.plan 2>&1 | FileCheck %s --check-prefix=MB
# RUN: %expect 1 %shardc %S/../../../examples/mlp.sh --mesh 2x2 --zero 1:pp -o %t.plan 2>&1 | FileCheck %s --check-prefix=AXIS
# RUN: %expect 2 %shardc %S/../../../examples/mlp.sh --mesh 2x2 --zero 4 -o %t.plan 2>&1 | FileCheck %s --check-prefix=STAGE
# RUN: %expect 2 %shardc %S/../../../examples/pipeline.sh --mesh 1x2x1 --schedule 2f2b -o %t.plan 2>&1 | FileCheck %s --check-prefix=NAME
# RUN: test ! -e %t.plan
# SCHED: # pipeline: gpipe over pp, 2 stages, 2 microbatches
# KEEP: infer.sh: error: --keep-gathered: the model has no 'train', so no backward to read gathered activations
# NOPIPE: mlp.sh: error: --schedule: the model has no pipelined 'repeat ... over AXIS'
# MB: pipeline.sh: error: --microbatches: 3 microbatches do not divide the batch dimension of input 'tokens' (8)
# AXIS: mlp.sh: error: --zero 1:pp: the mesh has no axis 'pp'
# STAGE: shardc: error: --zero 4: the ZeRO stages are 0 (none), 1, 2 and 3
# NAME: shardc: error: --schedule '2f2b': the schedules are gpipe, 1f1b and interleaved(V), V >= 1
