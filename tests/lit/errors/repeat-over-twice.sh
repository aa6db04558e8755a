# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# Only one repeat splits into pipeline stages.
mesh dp, pp
input x : f32[8, 8]
repeat 2 as enc over pp {
    x = relu(x)
}
repeat 2 as dec over pp {
    x = gelu(x)
}
# CHECK: {{^}}{{.*}}repeat-over-twice.sh:9:1: error: only one 'repeat ... over' is allowed (the first is on line 6){{$}}
# CHECK-NEXT: {{^}}repeat 2 as dec over pp {{{$}}
# CHECK-NEXT: {{^}}^{{$}}
