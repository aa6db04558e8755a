# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# interleaved needs its number of chunks per stage.
mesh dp, pp
input x : f32[8, 8]
repeat 4 as layers over pp {
    x = relu(x)
}
pipeline microbatches 4 schedule interleaved
# CHECK: {{^}}{{.*}}pipeline-interleaved-missing-chunks.sh:9:34: error: interleaved needs its number of chunks: interleaved(V){{$}}
# CHECK-NEXT: {{^}}pipeline microbatches 4 schedule interleaved{{$}}
# CHECK-NEXT: {{^}}                                 ^{{$}}
