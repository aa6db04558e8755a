# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# An error in a block body is an error even when nothing calls the block.
mesh dp, tp
block f(x : f32[4, 8]) -> f32[4, 8] {
    return x + foo
}
input x : f32[4, 8]
output x
# CHECK: {{^}}{{.*}}block-never-called-unknown-name.sh:6:16: error: unknown name 'foo'{{$}}
# CHECK-NEXT: {{^}}    return x + foo{{$}}
# CHECK-NEXT: {{^}}               ^{{$}}
