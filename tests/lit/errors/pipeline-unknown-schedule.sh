# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# zb is not a schedule.
mesh dp, pp
input x : f32[8, 8]
repeat 4 as layers over pp {
    x = relu(x)
}
pipeline microbatches 4 schedule zb
# CHECK: {{^}}{{.*}}pipeline-unknown-schedule.sh:9:34: error: unknown schedule 'zb' (use gpipe, 1f1b or interleaved(V)){{$}}
# CHECK-NEXT: {{^}}pipeline microbatches 4 schedule zb{{$}}
# CHECK-NEXT: {{^}}                                 ^{{$}}
