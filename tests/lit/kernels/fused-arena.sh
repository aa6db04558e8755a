# Kernels do not make the arena grow for nothing: a fused group keeps what
# it reads alive until its anchor, so the fusion pass lets a group run at
# most PASS_FUSE_HOLD ops after the last reader of what it reads, and never
# across a collective, send or recv (passes/fuse.h); a matmul's epilogue
# (cuBLASLt's bias, residual, activation) too. On the pipelined transformer
# (2x2x2, 1F1B, 4 microbatches) every stage's arena with kernels holds
# activations within 2% of those without (measured: the same bytes on
# stage 0, 129.5 KiB more on stage 1, 1.4% of its 9.6 MB). Before the rule,
# the gradient sums of all microbatches were one group run after the last
# microbatch, and stage 1's arena was 16% larger (29.7 MB for 25.6 MB);
# before the epilogue kept to it, each microbatch's weight-gradient product
# waited in a matmul kernel for the add into the accumulator, and the
# stages held 15.2 MB and 12.7 MB. The check is of the most activation
# bytes live at once, which the rule governs; the arenas are printed too
# (best-fit placement leaves other gaps: 27.0 MB with kernels for 26.7 MB
# without on stage 0, 27.7 MB before the sum over microbatches kept out of
# matmul and reduction kernels, kernels/pipeline-sum.sh).
# RUN: %shardc %S/../../../examples/pipeline.sh --mesh 2x2x2 --arch none --report json > %t.none
# RUN: %shardc %S/../../../examples/pipeline.sh --mesh 2x2x2 --arch sm_80 --report json > %t.fused
# RUN: python3 %S/fused-arena.py %t.none %t.fused 1.02 | FileCheck %s
# CHECK: stage 0: {{[0-9]+}} bytes of activations without kernels, {{[0-9]+}} with: ok
# CHECK: stage 1: {{[0-9]+}} bytes of activations without kernels, {{[0-9]+}} with: ok
