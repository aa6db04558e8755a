# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# A block parameter may not shadow a constant.
mesh dp, tp
let D = 8
block f(D : f32[4, 8]) -> f32[4, 8] {
    return D
}
# CHECK: {{^}}{{.*}}block-parameter-hides-constant.sh:6:9: error: parameter 'D' of block 'f' hides a constant (line 5){{$}}
# CHECK-NEXT: {{^}}block f(D : f32[4, 8]) -> f32[4, 8] {{{$}}
# CHECK-NEXT: {{^}}        ^{{$}}
