# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# A block is called, not used as a value.
mesh dp, tp
block f(x : f32[4, 8]) -> f32[4, 8] {
    return relu(x)
}
input x : f32[4, 8]
y = x + f
# CHECK: {{^}}{{.*}}block-name-as-value.sh:9:9: error: 'f' is a block; call it as f(...){{$}}
# CHECK-NEXT: {{^}}y = x + f{{$}}
# CHECK-NEXT: {{^}}        ^{{$}}
