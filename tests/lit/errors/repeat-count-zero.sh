# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# A repeat runs at least once.
mesh dp, tp
let L = 0
input x : f32[4, 8]
repeat L as layers {
    x = relu(x)
}
# CHECK: {{^}}{{.*}}repeat-count-zero.sh:7:8: error: repeat count must be at least 1, got 0{{$}}
# CHECK-NEXT: {{^}}repeat L as layers {{{$}}
# CHECK-NEXT: {{^}}       ^{{$}}
