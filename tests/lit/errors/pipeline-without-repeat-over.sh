# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# A pipeline needs a repeat ... over to make its stages.
mesh dp, pp
input x : f32[4, 8]
repeat 4 as layers {
    x = relu(x)
}
pipeline microbatches 2 schedule gpipe
# CHECK: {{^}}{{.*}}pipeline-without-repeat-over.sh:9:1: error: 'pipeline' needs a 'repeat ... over AXIS' to split into stages{{$}}
# CHECK-NEXT: {{^}}pipeline microbatches 2 schedule gpipe{{$}}
# CHECK-NEXT: {{^}}^{{$}}
