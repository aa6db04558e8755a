# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# A value is handed back once.
mesh dp, tp
input x : f32[4, 8]
y = relu(x)
output y, x, y
# CHECK: {{^}}{{.*}}output-twice.sh:7:14: error: 'y' is already an output (line 7){{$}}
# CHECK-NEXT: {{^}}output y, x, y{{$}}
# CHECK-NEXT: {{^}}             ^{{$}}
