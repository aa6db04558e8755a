# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# Division by a constant that is zero.
mesh dp, tp
let Z = 0
let A = 10 / Z
# CHECK: {{^}}{{.*}}const-division-by-zero.sh:6:12: error: division by zero{{$}}
# CHECK-NEXT: {{^}}let A = 10 / Z{{$}}
# CHECK-NEXT: {{^}}           ^{{$}}
