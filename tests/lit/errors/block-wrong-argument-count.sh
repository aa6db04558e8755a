# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# f takes one argument.
mesh dp, tp
block f(x : f32[4, 8]) -> f32[4, 8] {
    return relu(x)
}
input x : f32[4, 8]
y = f(x, x)
# CHECK: {{^}}{{.*}}block-wrong-argument-count.sh:9:10: error: block 'f' takes 1 argument{{$}}
# CHECK-NEXT: {{^}}y = f(x, x){{$}}
# CHECK-NEXT: {{^}}         ^{{$}}
