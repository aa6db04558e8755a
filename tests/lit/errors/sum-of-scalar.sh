# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# A scalar has no axis to reduce.
mesh dp, tp
input x : f32[]
y = sum(x)
# CHECK: {{^}}{{.*}}sum-of-scalar.sh:6:5: error: 'sum' of a scalar has no axis to reduce{{$}}
# CHECK-NEXT: {{^}}y = sum(x){{$}}
# CHECK-NEXT: {{^}}    ^{{$}}
