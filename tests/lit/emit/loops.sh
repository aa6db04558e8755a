# --emit loops prints each stage as the plan holds it: a pipeline stage in
# loop form by its slotted buffers (each with its copies), its slot maps
# (each microbatch's slot, a repeated pattern written once), its bodies
# once (with how often and for which microbatches each runs, and the step
# of an offset that moves with the microbatch), and its items in order, a
# run that repeats with the microbatches moved on written once. Where the
# plan does not grow with the microbatches, neither does the text: 1f1b on
# 2 stages prints as many lines at 96 microbatches as at 24 (--emit
# schedule, the instructions as the runtime runs them, grows 4x). (Up to
# 16 microbatches this model's first stage takes best fit's placement, a
# smaller arena than placing alike, whose slot maps do not repeat.) An
# interleaved schedule's items repeat a group of as many microbatches as
# stages. A plan without a pipeline, or written --unroll, prints plain
# stages as --emit schedule does.
# RUN: %shardc %S/../../../examples/pipeline.sh -D L=8 -D S=16 -D D=32 -D NH=2 -D V=64 -D B=48 --microbatches 24 --mesh 1x2x1 --arch none --emit loops > %t.16
# RUN: %shardc %S/../../../examples/pipeline.sh -D L=8 -D S=16 -D D=32 -D NH=2 -D V=64 -D B=192 --microbatches 96 --mesh 1x2x1 --arch none --emit loops > %t.64
# RUN: FileCheck %s --check-prefix=ONE < %t.16
# RUN: FileCheck %s --check-prefix=ONE64 < %t.64
# RUN: test "$(wc -l < %t.16)" -eq "$(wc -l < %t.64)"
# RUN: %shardc %S/../../../examples/pipeline.sh -D L=8 -D S=16 -D D=32 -D NH=2 -D V=64 -D B=128 --microbatches 64 --mesh 1x4x1 --schedule 'interleaved(2)' --arch none --emit loops | FileCheck %s --check-prefix=INT
# RUN: %shardc %S/../../../examples/mlp.sh --arch none --emit loops | FileCheck %s --check-prefix=PLAIN
# RUN: %shardc %S/../../../examples/pipeline.sh -D L=8 -D S=16 -D D=32 -D NH=2 -D V=64 -D B=8 --microbatches 4 --mesh 1x2x1 --arch none --unroll --emit loops | FileCheck %s --check-prefix=UNROLL

# ONE:      {{^}}stage 0 (pp = 0): in loop form, 7 bodies of {{[0-9]+}} instructions run in 97 items for 24 microbatches; {{[0-9]+}} buffers in an arena of {{[0-9]+}} bytes{{$}}
# ONE-NEXT: {{^}}// a slotted buffer is a value of one microbatch, held in the copy of its slot in its slot map{{$}}
# ONE-NEXT: {{^}}//   %{{[0-9]+}}: slot map {{[0-9]+}}, copies %{{[0-9]+}}
# ONE:      {{^}}//   slot map 0: 0 (1) x 23{{$}}
# ONE-NEXT: {{^}}//   slot map 1: (0) x 24{{$}}
# ONE-NEXT: {{^}}//   slot map 2: 0 (0 1) x 11 0{{$}}
# ONE:      {{^}}body b0: {{[0-9]+}} instructions, run 1 time (microbatch 0){{$}}
# ONE:      {{^}}body b2: {{[0-9]+}} instructions, run 23 times (microbatches 1 to 23){{$}}
# ONE:      = extract %{{[0-9]+}} : i32[2, 16]    // offset 0 + 32 per microbatch{{$}}
# ONE:      {{^}}items, in order: body(microbatch){{$}}
# ONE-NEXT: {{^}}    b0(0) b1(0) b2(1) b1(1) b3(0) b4(0){{$}}
# ONE-NEXT: {{^}}    b2(m) b1(m) b3(m - 1) b5(m - 1) for m = 2 .. 23{{$}}
# ONE-NEXT: {{^}}    b3(23) b5(23) b6(0){{$}}
# ONE:      {{^}}stage 1 (pp = 1): in loop form, 7 bodies of {{[0-9]+}} instructions run in 96 items for 24 microbatches;

# ONE64:      {{^}}//   slot map 0: 0 (1) x 95{{$}}
# ONE64:      {{^}}    b2(m) b1(m) b3(m - 1) b5(m - 1) for m = 2 .. 95{{$}}

# INT:      {{^}}stage 0 (pp = 0): in loop form, {{[0-9]+}} bodies of {{[0-9]+}} instructions run in {{[0-9]+}} items for 64 microbatches;
# INT:      {{^}}    for m = 3 .. 55 step 4:{{$}}
# INT-NEXT: {{^}}        b{{[0-9]+}}(m) b{{[0-9]+}}(m + 4)

# PLAIN:     {{^}}stage 0 (every rank): {{[0-9]+}} instructions, {{[0-9]+}} buffers in an arena of
# PLAIN-NOT: loop form
# PLAIN:     = matmul

# UNROLL:     {{^}}stage 0 (pp = 0): {{[0-9]+}} instructions,
# UNROLL-NOT: loop form
