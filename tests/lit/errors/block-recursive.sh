# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# A block that calls itself would unroll forever.
mesh dp, tp
block f(x : f32[4, 8]) -> f32[4, 8] {
    return f(x)
}
input x : f32[4, 8]
y = f(x)
# CHECK: {{^}}{{.*}}block-recursive.sh:6:12: error: block 'f' calls itself{{$}}
# CHECK-NEXT: {{^}}    return f(x){{$}}
# CHECK-NEXT: {{^}}           ^{{$}}
