# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# The batch of 6 does not split into 4 microbatches.
mesh dp, pp
input x : f32[6, 8]
repeat 4 as layers over pp {
    x = relu(x)
}
pipeline microbatches 4 schedule 1f1b
# CHECK: {{^}}{{.*}}pipeline-microbatches-not-dividing.sh:9:23: error: 4 microbatches do not divide the batch dimension of input 'x' (6){{$}}
# CHECK-NEXT: {{^}}pipeline microbatches 4 schedule 1f1b{{$}}
# CHECK-NEXT: {{^}}                      ^{{$}}
