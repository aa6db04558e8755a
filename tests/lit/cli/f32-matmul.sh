# --f32-matmul bf16x3: every f32 matmul reads its operands' bf16 parts
# (passes/parts.c), on every backend: the plan without kernels runs the
# parts' products on the CPU backend to within f32's rounding of the plan
# of f32 matmuls (the loss to its 6 printed decimals; the outputs checked
# by tests/run_train.py's train/*/2x2-bf16x3 against PyTorch). The report
# counts the f32 product's FLOPs (the same) and the parts' bytes in the
# memory plan (a larger peak).
# RUN: %shardc %S/../../../examples/mlp.sh --mesh 2x2 --arch none --f32-matmul bf16x3 --emit stage-ir | FileCheck %s --check-prefix=IR
# IR:      split3 %x {dim = 1} : bf16[32, 3072] shard(dp, _)
# IR-NEXT: split3 %w1 {dim = 0, reversed = true} : bf16[3072, 2048] shard(_, tp)
# IR-NEXT: matmul %{{[0-9]+}}, %{{[0-9]+}} {parts = true} : f32[32, 2048] auto(dp, tp)
# RUN: %shardc %S/../../../examples/mlp.sh --mesh 2x2 --arch none -o %t.f32.plan
# RUN: %shardc %S/../../../examples/mlp.sh --mesh 2x2 --arch none --f32-matmul bf16x3 -o %t.x3.plan
# RUN: %shardrun %t.f32.plan --steps 2 | grep '^step 2/2' | cut -d' ' -f1-5 > %t.f32.loss
# RUN: %shardrun %t.x3.plan --steps 2 | grep '^step 2/2' | cut -d' ' -f1-5 > %t.x3.loss
# RUN: diff %t.f32.loss %t.x3.loss
# RUN: %shardc %S/../../../examples/mlp.sh --mesh 2x2 --arch none --report > %t.f32.rep
# RUN: %shardc %S/../../../examples/mlp.sh --mesh 2x2 --arch none --f32-matmul bf16x3 --report > %t.x3.rep
# RUN: grep 'flops per rank' %t.f32.rep > %t.f32.flops
# RUN: grep 'flops per rank' %t.x3.rep | diff - %t.f32.flops
# RUN: grep 'peak bytes per rank' %t.f32.rep > %t.f32.peak
# RUN: grep 'peak bytes per rank' %t.x3.rep > %t.x3.peak
# RUN: %not diff %t.f32.peak %t.x3.peak
# f32 is the default; every --arch target must have bf16 tensor cores; the
# modes are two
# RUN: %shardc %S/../../../examples/mlp.sh --mesh 2x2 --arch none --f32-matmul f32 --report | diff - %t.f32.rep
# RUN: %expect 2 %shardc %S/../../../examples/mlp.sh --mesh 2x2 --arch sm_75,sm_90 --f32-matmul bf16x3 -o %t.plan 2>&1 | FileCheck %s --check-prefix=ARCH
# ARCH: shardc: error: --f32-matmul bf16x3 runs f32 matmuls on bf16 tensor cores, which sm_75 lacks: every --arch target must be sm_80 or newer
# RUN: %expect 2 %shardc %S/../../../examples/mlp.sh --mesh 2x2 --f32-matmul tf32 -o %t.plan 2>&1 | FileCheck %s --check-prefix=MODE
# MODE: shardc: error: --f32-matmul tf32: the modes are f32 (the default) and bf16x3
