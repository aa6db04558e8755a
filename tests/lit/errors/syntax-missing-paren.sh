# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# The ')' is missing: the call runs on into the next line.
mesh dp, tp
input x : f32[4, 8]
y = relu(x
z = y
# CHECK: {{^}}{{.*}}syntax-missing-paren.sh:7:1: error: syntax error, unexpected name, expecting ')'{{$}}
# CHECK-NEXT: {{^}}z = y{{$}}
# CHECK-NEXT: {{^}}^{{$}}
