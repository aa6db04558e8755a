# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# A block's name cannot be assigned.
mesh dp, tp
block f(x : f32[4]) -> f32[4] {
    return relu(x)
}
input x : f32[4]
f = x * 2
# CHECK: {{^}}{{.*}}assign-to-block.sh:9:1: error: cannot assign to 'f', which is a block (line 5){{$}}
# CHECK-NEXT: {{^}}f = x * 2{{$}}
# CHECK-NEXT: {{^}}^{{$}}
