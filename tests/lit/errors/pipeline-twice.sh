# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# One pipeline statement.
mesh dp, pp
input x : f32[8, 8]
repeat 4 as layers over pp {
    x = relu(x)
}
pipeline microbatches 4 schedule gpipe
pipeline microbatches 2 schedule 1f1b
# CHECK: {{^}}{{.*}}pipeline-twice.sh:10:1: error: 'pipeline' is already given (line 9){{$}}
# CHECK-NEXT: {{^}}pipeline microbatches 2 schedule 1f1b{{$}}
# CHECK-NEXT: {{^}}^{{$}}
