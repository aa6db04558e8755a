# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# A block body must end with return; the fault is in the block, not the call.
mesh dp, tp
block f(x : f32[4, 8]) -> f32[4, 8] {
    y = relu(x)
}
input x : f32[4, 8]
z = f(x)
# CHECK: {{^}}{{.*}}block-missing-return.sh:5:7: error: block 'f' ends without 'return'{{$}}
# CHECK-NEXT: {{^}}block f(x : f32[4, 8]) -> f32[4, 8] {{{$}}
# CHECK-NEXT: {{^}}      ^{{$}}
