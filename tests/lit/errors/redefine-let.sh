# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# A constant bound twice.
mesh dp, tp
let B = 4, D = 8
let B = 16
# CHECK: {{^}}{{.*}}redefine-let.sh:6:5: error: 'B' is already defined as a constant (line 5){{$}}
# CHECK-NEXT: {{^}}let B = 16{{$}}
# CHECK-NEXT: {{^}}    ^{{$}}
