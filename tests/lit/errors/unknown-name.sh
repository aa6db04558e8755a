# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# A name that is never defined.
mesh dp, tp
input x : f32[4, 8]
y = foo + 1
# CHECK: {{^}}{{.*}}unknown-name.sh:6:5: error: unknown name 'foo'{{$}}
# CHECK-NEXT: {{^}}y = foo + 1{{$}}
# CHECK-NEXT: {{^}}    ^{{$}}
