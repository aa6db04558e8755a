# Kernels do not make the arena grow for nothing: a fused group keeps what
# it reads alive until its anchor, so the fusion pass lets a group run at
# most PASS_FUSE_HOLD ops after the last reader of what it reads, and never
# across a collective, send or recv (passes/fuse.h); a matmul's epilogue
# (cuBLASLt's bias, residual, activation) too. On the pipelined transformer
# (2x2x2, 1F1B, 4 microbatches) every stage's arena with kernels holds
# activations within 5% of those without (measured: 256 KiB and 384 KiB
# more, 2.1% and 4.1% of the 12.6 MB and 9.7 MB without). Before the rule,
# the gradient sums of all microbatches were one group run after the last
# microbatch, and stage 1's arena was 16% larger (29.7 MB for 25.6 MB);
# before the epilogue kept to it, each microbatch's weight-gradient product
# waited in a matmul kernel for the add into the accumulator, and the
# stages held 15.2 MB and 12.7 MB. The check is of the most activation
# bytes live at once, which the rule governs; the arenas are printed too
# (best-fit placement leaves other gaps: 28.8 MB with kernels for 30.4 MB
# without on stage 0).
# RUN: %shardc %S/../../../examples/pipeline.sh --mesh 2x2x2 --arch none --report json > %t.none
# RUN: %shardc %S/../../../examples/pipeline.sh --mesh 2x2x2 --arch sm_80 --report json > %t.fused
# RUN: python3 %S/fused-arena.py %t.none %t.fused 1.05 | FileCheck %s
# CHECK: stage 0: {{[0-9]+}} bytes of activations without kernels, {{[0-9]+}} with: ok
# CHECK: stage 1: {{[0-9]+}} bytes of activations without kernels, {{[0-9]+}} with: ok
