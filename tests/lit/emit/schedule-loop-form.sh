# --emit schedule prints each stage's instructions as the runtime runs them
# and, for a pipeline stage, what the plan holds: its loop form's bodies,
# their instructions, and the schedule's items (codegen/plan_roll.c). The
# instructions written do not grow with the microbatches: a task's
# instances are one body, and so are the sends and receives of one part
# (a receive of one chunk's activation, say), each run of them numbered by
# its place among the microbatch's runs of its kind, which an interleaved
# schedule has two of per kind. Only the items grow: 1f1b on 2 stages at
# 4 and at 16 microbatches, interleaved(2) on 4 stages at 8 and 16, the
# same bodies of the same instructions. Before, an interleaved schedule's
# sends and receives ran in bodies once per microbatch, two runs of a kind
# taken for one (stage 0: 49 bodies of 522 instructions at 16
# microbatches). A plan without a pipeline says nothing more.
# RUN: %shardc %S/../../../examples/pipeline.sh -D L=8 -D S=16 -D D=32 -D NH=2 -D V=64 -D B=8 --microbatches 4 --mesh 1x2x1 --arch none --emit schedule > %t.4
# RUN: %shardc %S/../../../examples/pipeline.sh -D L=8 -D S=16 -D D=32 -D NH=2 -D V=64 -D B=32 --microbatches 16 --mesh 1x2x1 --arch none --emit schedule > %t.16
# RUN: cat %t.4 %t.16 | FileCheck %s --check-prefix=ONE
# RUN: %shardc %S/../../../examples/pipeline.sh -D L=8 -D S=16 -D D=32 -D NH=2 -D V=64 -D B=16 --microbatches 8 --mesh 1x4x1 --schedule 'interleaved(2)' --arch none --emit schedule > %t.i8
# RUN: %shardc %S/../../../examples/pipeline.sh -D L=8 -D S=16 -D D=32 -D NH=2 -D V=64 -D B=32 --microbatches 16 --mesh 1x4x1 --schedule 'interleaved(2)' --arch none --emit schedule > %t.i16
# RUN: cat %t.i8 %t.i16 | FileCheck %s --check-prefix=INT
# RUN: %shardc %S/../../../examples/mlp.sh --arch none --emit schedule | FileCheck %s --check-prefix=PLAIN

# ONE:      {{^}}stage 0 (pp = 0): {{[0-9]+}} instructions,
# ONE-NEXT: {{^}}// in the plan: [[B0:[0-9]+]] bodies of [[I0:[0-9]+]] instructions, run in 17 items for 4 microbatches{{$}}
# ONE:      {{^}}stage 1 (pp = 1): {{[0-9]+}} instructions,
# ONE-NEXT: {{^}}// in the plan: [[B1:[0-9]+]] bodies of [[I1:[0-9]+]] instructions, run in 16 items for 4 microbatches{{$}}
# ONE:      {{^}}stage 0 (pp = 0): {{[0-9]+}} instructions,
# ONE-NEXT: {{^}}// in the plan: [[B0]] bodies of [[I0]] instructions, run in 65 items for 16 microbatches{{$}}
# ONE:      {{^}}stage 1 (pp = 1): {{[0-9]+}} instructions,
# ONE-NEXT: {{^}}// in the plan: [[B1]] bodies of [[I1]] instructions, run in 64 items for 16 microbatches{{$}}

# INT:      {{^}}stage 0 (pp = 0): {{[0-9]+}} instructions,
# INT-NEXT: {{^}}// in the plan: [[B0:[0-9]+]] bodies of [[I0:[0-9]+]] instructions, run in 81 items for 8 microbatches{{$}}
# INT:      {{^}}stage 3 (pp = 3): {{[0-9]+}} instructions,
# INT-NEXT: {{^}}// in the plan: [[B3:[0-9]+]] bodies of [[I3:[0-9]+]] instructions, run in 80 items for 8 microbatches{{$}}
# INT:      {{^}}stage 0 (pp = 0): {{[0-9]+}} instructions,
# INT-NEXT: {{^}}// in the plan: [[B0]] bodies of [[I0]] instructions, run in 161 items for 16 microbatches{{$}}
# INT:      {{^}}stage 3 (pp = 3): {{[0-9]+}} instructions,
# INT-NEXT: {{^}}// in the plan: [[B3]] bodies of [[I3]] instructions, run in 160 items for 16 microbatches{{$}}

# PLAIN:     {{^}}stage 0 (every rank): {{[0-9]+}} instructions,
# PLAIN-NOT: // in the plan
