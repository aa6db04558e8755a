# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# A block sees only its arguments, not the program's tensors.
mesh dp, tp
input bias : f32[8]
block f(x : f32[4, 8]) -> f32[4, 8] {
    return x + bias
}
input x : f32[4, 8]
z = f(x)
# CHECK: {{^}}{{.*}}block-outer-tensor.sh:7:16: error: 'bias' is defined outside block 'f'; pass it as an argument{{$}}
# CHECK-NEXT: {{^}}    return x + bias{{$}}
# CHECK-NEXT: {{^}}               ^{{$}}
