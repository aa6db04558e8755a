# The report plans memory as the plan writer does: with kernels, the fused
# groups keep what they read alive until their anchors, so peak_bytes is the
# arena the plan allocates, with or without kernels.
# RUN: { %shardc %S/../../../examples/mlp.sh --mesh 2x2 --arch sm_80 --emit schedule | grep "^stage"; \
# RUN:   %shardc %S/../../../examples/mlp.sh --mesh 2x2 --arch sm_80 --report json; } | FileCheck %s
# RUN: { %shardc %S/../../../examples/mlp.sh --mesh 2x2 --arch none --emit schedule | grep "^stage"; \
# RUN:   %shardc %S/../../../examples/mlp.sh --mesh 2x2 --arch none --report json; } | FileCheck %s --check-prefix=NONE
# RUN: { %shardc %S/../../../examples/pipeline.sh --mesh 2x2x2 --arch sm_80 --emit schedule | grep '^stage'; \
# RUN:   %shardc %S/../../../examples/pipeline.sh --mesh 2x2x2 --arch sm_80 --report; } | FileCheck %s --check-prefix=PIPE
# CHECK: stage 0 (every rank): {{[0-9]+}} instructions, {{[0-9]+}} buffers in an arena of [[A:[0-9]+]] bytes, {{[0-9]+}} kernels
# CHECK: "peak_bytes": [[A]],
# NONE: stage 0 (every rank): {{[0-9]+}} instructions, {{[0-9]+}} buffers in an arena of [[A:[0-9]+]] bytes{{$}}
# NONE: "peak_bytes": [[A]],
# PIPE: stage 0 (pp = 0): {{[0-9]+}} instructions, {{[0-9]+}} buffers in an arena of [[A0:[0-9]+]] bytes, {{[0-9]+}} kernels
# PIPE: stage 1 (pp = 1): {{[0-9]+}} instructions, {{[0-9]+}} buffers in an arena of [[A1:[0-9]+]] bytes, {{[0-9]+}} kernels
# PIPE: stage 0: 4 ranks
# PIPE: peak bytes per rank: {{ *}}[[A0]]{{$}}
# PIPE: stage 1: 4 ranks
# PIPE: peak bytes per rank: {{ *}}[[A1]]{{$}}
