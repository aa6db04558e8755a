# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# Two blocks with one name.
mesh dp, tp
block f(x : f32[4]) -> f32[4] {
    return relu(x)
}
block f(x : f32[4]) -> f32[4] {
    return gelu(x)
}
# CHECK: {{^}}{{.*}}redefine-block.sh:8:7: error: 'f' is already defined as a block (line 5){{$}}
# CHECK-NEXT: {{^}}block f(x : f32[4]) -> f32[4] {{{$}}
# CHECK-NEXT: {{^}}      ^{{$}}
