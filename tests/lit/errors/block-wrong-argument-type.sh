# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# f takes f32[4, 8], gets f32[8, 4].
mesh dp, tp
block f(x : f32[4, 8]) -> f32[4, 8] {
    return relu(x)
}
input x : f32[8, 4]
y = f(x)
# CHECK: {{^}}{{.*}}block-wrong-argument-type.sh:9:7: error: argument 'x' of block 'f' is f32[8, 4], but the block takes f32[4, 8]{{$}}
# CHECK-NEXT: {{^}}y = f(x){{$}}
# CHECK-NEXT: {{^}}      ^{{$}}
