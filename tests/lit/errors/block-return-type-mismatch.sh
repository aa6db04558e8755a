# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# The body returns [4] where the block declares [4, 8].
mesh dp, tp
block f(x : f32[4, 8]) -> f32[4, 8] {
    return sum(x, axis = 1)
}
input x : f32[4, 8]
y = f(x)
# CHECK: {{^}}{{.*}}block-return-type-mismatch.sh:6:12: error: block 'f' returns f32[4], but declares f32[4, 8]{{$}}
# CHECK-NEXT: {{^}}    return sum(x, axis = 1){{$}}
# CHECK-NEXT: {{^}}           ^{{$}}
