# Every example on every mesh its axes allow partitions and passes the
# static schedule verifier (shardc runs it on every program it compiles,
# and exits 3 if it fails).
# RUN: for m in 1x1 2x1 1x2 2x2 4x2 2x4; do %shardc %S/../../../examples/mlp.sh --mesh $m --report json; done | FileCheck %s --check-prefix=MLP
# RUN: for m in 1x1 2x1 1x2 2x2 4x2 2x4 8x1 1x8; do %shardc %S/../../../examples/transformer.sh --mesh $m --report json; done | FileCheck %s --check-prefix=GPT
# RUN: for m in 1x1x1 2x2x2 1x2x1 2x1x2 1x4x1 2x4x1 1x2x4; do %shardc %S/../../../examples/pipeline.sh --mesh $m --report json; done | FileCheck %s --check-prefix=PIPE
# MLP-COUNT-6: {"mesh":
# GPT-COUNT-8: {"mesh":
# PIPE-COUNT-7: {"mesh":
