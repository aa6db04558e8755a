# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# 2^62 * 4 overflows 64 bits.
mesh dp, tp
let A = 4611686018427387904
let B = A * 4
# CHECK: {{^}}{{.*}}const-overflow.sh:6:11: error: integer overflow in '*'{{$}}
# CHECK-NEXT: {{^}}let B = A * 4{{$}}
# CHECK-NEXT: {{^}}          ^{{$}}
