# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# g takes two arguments.
mesh dp, tp
block g(a : f32[4, 8], b : f32[4, 8]) -> f32[4, 8] {
    return a + b
}
input x : f32[4, 8]
y = g(x)
# CHECK: {{^}}{{.*}}block-too-few-arguments.sh:9:5: error: block 'g' takes 2 arguments, but 1 is given{{$}}
# CHECK-NEXT: {{^}}y = g(x){{$}}
# CHECK-NEXT: {{^}}    ^{{$}}
