# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# Two names in a row: the statement should end after the first.
mesh dp, tp
input x : f32[4, 8]
y = x x
z = y
# CHECK: {{^}}{{.*}}syntax-unexpected-token.sh:6:7: error: syntax error, unexpected name, expecting end of line{{$}}
# CHECK-NEXT: {{^}}y = x x{{$}}
# CHECK-NEXT: {{^}}      ^{{$}}
