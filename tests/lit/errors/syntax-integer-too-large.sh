# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# 2^64 does not fit.
mesh dp, tp
let B = 18446744073709551616
# CHECK: {{^}}{{.*}}syntax-integer-too-large.sh:5:9: error: integer literal 18446744073709551616 is too large{{$}}
# CHECK-NEXT: {{^}}let B = 18446744073709551616{{$}}
# CHECK-NEXT: {{^}}        ^{{$}}
