# --emit schedule: each stage's order of forward (F) and backward (B)
# microbatch steps, before the plan's instruction lists. gpipe runs every
# forward then every backward; 1f1b starts p - 1 - s forwards ahead on
# stage s, then alternates; interleaved(V) is Megatron's order (F<m>.<v>:
# microbatch m through the stage's chunk v), microbatches in groups of p.
# RUN: sed 's/schedule 1f1b/schedule gpipe/' %S/../../../examples/pipeline.sh > %t-g.sh
# RUN: sed 's/schedule 1f1b/schedule interleaved(2)/' %S/../../../examples/pipeline.sh > %t-i.sh
# RUN: %shardc %t-g.sh --mesh 1x2x1 --emit schedule | FileCheck %s --check-prefix=G
# G: # pipeline: gpipe over pp, 2 stages, 4 microbatches
# G: # stage 0: F0 F1 F2 F3 B0 B1 B2 B3
# G-NEXT: # stage 1: F0 F1 F2 F3 B0 B1 B2 B3
# G: mesh dp = 1, pp = 2, tp = 1
# RUN: %shardc %S/../../../examples/pipeline.sh --mesh 2x4x1 -DB=16 --emit schedule | FileCheck %s --check-prefix=F
# F: # pipeline: 1f1b over pp, 4 stages, 4 microbatches
# F: # stage 0: F0 F1 F2 F3 B0 B1 B2 B3
# F-NEXT: # stage 1: F0 F1 F2 B0 F3 B1 B2 B3
# F-NEXT: # stage 2: F0 F1 B0 F2 B1 F3 B2 B3
# F-NEXT: # stage 3: F0 B0 F1 B1 F2 B2 F3 B3
# RUN: %shardc %t-i.sh --mesh 1x2x1 --emit schedule | FileCheck %s --check-prefix=I
# I: # pipeline: interleaved(2) over pp, 2 stages, 4 microbatches, 2 chunks per stage
# I: # stage 0: F0.0 F1.0 F0.1 F1.1 F2.0 B0.1 F3.0 B1.1 F2.1 B0.0 F3.1 B1.0 B2.1 B3.1 B2.0 B3.0
# I-NEXT: # stage 1: F0.0 F1.0 F0.1 B0.1 F1.1 B1.1 F2.0 B0.0 F3.0 B1.0 F2.1 B2.1 F3.1 B3.1 B2.0 B3.0
#
# The instruction lists follow the task order, and between two tasks the
# sends and recvs come in the order the neighbour posts them: 1f1b's stage 0
# sends F1's activations before it waits for B0's gradient, so stage 1,
# after B0, first receives F1's activations, then sends B0's gradient.
# RUN: %shardc %S/../../../examples/pipeline.sh --mesh 1x2x1 --emit schedule | FileCheck %s --check-prefix=ORDER
# ORDER: stage 0 (pp = 0)
# ORDER: send [[A1:%[0-9]+]] -> stage 1
# ORDER: send [[A2:%[0-9]+]] -> stage 1
# ORDER-NEXT: = recv <- stage 1
# ORDER: stage 1 (pp = 1)
# ORDER-NEXT: // in the plan: {{[0-9]+}} bodies
# ORDER-NEXT: = recv <- stage 0
# ORDER: = recv <- stage 0
# ORDER-NEXT: send {{%[0-9]+}} -> stage 0
#
# Without a pipeline there is no schedule head.
# RUN: %shardc %S/../../../examples/mlp.sh --mesh 2x2 --emit schedule | FileCheck %s --check-prefix=NONE
# NONE-NOT: # pipeline
# NONE: mesh dp = 2, tp = 2
