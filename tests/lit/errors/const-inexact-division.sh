# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# Constant division must be exact.
mesh dp, tp
let A = 10 / 4
# CHECK: {{^}}{{.*}}const-inexact-division.sh:5:12: error: 10 / 4 is not exact (remainder 2){{$}}
# CHECK-NEXT: {{^}}let A = 10 / 4{{$}}
# CHECK-NEXT: {{^}}           ^{{$}}
