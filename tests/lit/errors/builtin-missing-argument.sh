# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# reshape needs the new shape.
mesh dp, tp
input x : f32[4, 8]
y = reshape(x)
# CHECK: {{^}}{{.*}}builtin-missing-argument.sh:6:5: error: 'reshape' needs argument 'shape'{{$}}
# CHECK-NEXT: {{^}}y = reshape(x){{$}}
# CHECK-NEXT: {{^}}    ^{{$}}
