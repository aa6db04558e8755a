# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# Inputs are declared at the top level.
mesh dp, tp
block f(x : f32[4, 8]) -> f32[4, 8] {
    input y : f32[4, 8]
    return x + y
}
input x : f32[4, 8]
z = f(x)
# CHECK: {{^}}{{.*}}block-input-inside.sh:6:5: error: 'input' belongs at the top level, not inside a block{{$}}
# CHECK-NEXT: {{^}}    input y : f32[4, 8]{{$}}
# CHECK-NEXT: {{^}}    ^{{$}}
