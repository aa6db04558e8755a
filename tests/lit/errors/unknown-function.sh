# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# There is no builtin named swish.
mesh dp, tp
input x : f32[4, 8]
y = swish(x)
# CHECK: {{^}}{{.*}}unknown-function.sh:6:5: error: unknown function 'swish'{{$}}
# CHECK-NEXT: {{^}}y = swish(x){{$}}
# CHECK-NEXT: {{^}}    ^{{$}}
