# A pipeline stage's program is written in the plan's loop form (format 14):
# each task's forward or backward once, run for every microbatch in the
# schedule's order. Expanded when shardrun reads it, it computes what the
# unrolled plan (--unroll) does, bit for bit: two training steps give the
# same outputs and the same params, for 1f1b, gpipe and interleaved(2) with
# ZeRO 1, and 1f1b at 32 microbatches on 4 stages, where the memory plan
# places each microbatch's values where an earlier one's were (four in
# flight, so each value cycles through a few places) and the unrolled plan
# (--unroll, best fit) places them elsewhere. The plan is less than half
# the unrolled one's size; at 32 microbatches less than a seventh (0.12
# without kernels; 0.16 before those places and the report's "times").
# A microbatch's sends and receives roll too, one body per run of them
# that repeats (codegen/plan_roll.c), so the plan at 32 microbatches is
# within 10% of the one at 4 microbatches of the same size (measured 1.04
# times; 1.27 while they ran once per microbatch).
# RUN: %shardc %S/../../../examples/pipeline.sh -D L=4 -D B=16 -D S=16 -D D=32 -D NH=2 -D V=64 --microbatches 8 --mesh 1x2x1 -o %t.plan
# RUN: %shardc %S/../../../examples/pipeline.sh -D L=4 -D B=16 -D S=16 -D D=32 -D NH=2 -D V=64 --microbatches 8 --mesh 1x2x1 --unroll -o %t.u.plan
# RUN: %shardrun %t.plan --steps 2 --outputs %t.o.st --save-params %t.p.st
# RUN: %shardrun %t.u.plan --steps 2 --outputs %t.uo.st --save-params %t.up.st
# RUN: cmp %t.o.st %t.uo.st
# RUN: cmp %t.p.st %t.up.st
# RUN: test $(wc -c < %t.plan) -lt $(( $(wc -c < %t.u.plan) / 2 ))
# RUN: %shardc %S/../../../examples/pipeline.sh -D L=4 -D B=16 -D S=16 -D D=32 -D NH=2 -D V=64 --microbatches 8 --mesh 1x4x1 --schedule gpipe -o %t.g.plan
# RUN: %shardc %S/../../../examples/pipeline.sh -D L=4 -D B=16 -D S=16 -D D=32 -D NH=2 -D V=64 --microbatches 8 --mesh 1x4x1 --schedule gpipe --unroll -o %t.gu.plan
# RUN: %shardrun %t.g.plan --steps 2 --save-params %t.g.st
# RUN: %shardrun %t.gu.plan --steps 2 --save-params %t.gu.st
# RUN: cmp %t.g.st %t.gu.st
# RUN: %shardc %S/../../../examples/pipeline.sh -D L=4 -D B=16 -D S=16 -D D=32 -D NH=2 -D V=64 --microbatches 8 --mesh 2x2x1 --schedule 'interleaved(2)' --zero 1 -o %t.i.plan
# RUN: %shardc %S/../../../examples/pipeline.sh -D L=4 -D B=16 -D S=16 -D D=32 -D NH=2 -D V=64 --microbatches 8 --mesh 2x2x1 --schedule 'interleaved(2)' --zero 1 --unroll -o %t.iu.plan
# RUN: %shardrun %t.i.plan --steps 2 --save-params %t.i.st
# RUN: %shardrun %t.iu.plan --steps 2 --save-params %t.iu.st
# RUN: cmp %t.i.st %t.iu.st
# RUN: %shardc %S/../../../examples/pipeline.sh -D L=4 -D B=64 -D S=16 -D D=32 -D NH=2 -D V=64 --microbatches 32 --mesh 1x4x1 -o %t.m.plan
# RUN: %shardc %S/../../../examples/pipeline.sh -D L=4 -D B=64 -D S=16 -D D=32 -D NH=2 -D V=64 --microbatches 32 --mesh 1x4x1 --unroll -o %t.mu.plan
# RUN: %shardrun %t.m.plan --steps 2 --outputs %t.mo.st --save-params %t.m.st
# RUN: %shardrun %t.mu.plan --steps 2 --outputs %t.muo.st --save-params %t.mu.st
# RUN: cmp %t.mo.st %t.muo.st
# RUN: cmp %t.m.st %t.mu.st
# RUN: test $(wc -c < %t.m.plan) -lt $(( $(wc -c < %t.mu.plan) / 7 ))
# RUN: %shardc %S/../../../examples/pipeline.sh -D L=4 -D B=8 -D S=16 -D D=32 -D NH=2 -D V=64 --microbatches 4 --mesh 1x4x1 -o %t.m4.plan
# RUN: test $(( $(wc -c < %t.m.plan) * 10 )) -lt $(( $(wc -c < %t.m4.plan) * 11 ))
