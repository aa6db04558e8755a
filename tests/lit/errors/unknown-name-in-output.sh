# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# An output that names nothing.
mesh dp, tp
input x : f32[4, 8]
y = relu(x)
output y, z
# CHECK: {{^}}{{.*}}unknown-name-in-output.sh:7:11: error: unknown name 'z'{{$}}
# CHECK-NEXT: {{^}}output y, z{{$}}
# CHECK-NEXT: {{^}}          ^{{$}}
