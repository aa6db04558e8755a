# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# Outputs are declared at the top level.
mesh dp, tp
block f(x : f32[4, 8]) -> f32[4, 8] {
    output x
    return x
}
input x : f32[4, 8]
y = f(x)
# CHECK: {{^}}{{.*}}output-inside-block.sh:6:5: error: 'output' belongs at the top level, not inside a block{{$}}
# CHECK-NEXT: {{^}}    output x{{$}}
# CHECK-NEXT: {{^}}    ^{{$}}
