# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# A non-ASCII character outside a comment: é.
mesh dp, tp
input x : f32[4, 8]
y = x é 2
# CHECK: {{^}}{{.*}}syntax-unexpected-byte.sh:6:7: error: unexpected byte 0xc3{{$}}
# CHECK-NEXT: {{^}}y = x é 2{{$}}
# CHECK-NEXT: {{^}}      ^{{$}}
