# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# A '(' still open at the end of the file: the error points at the bracket
# left open, not past the end of the file.
mesh dp, tp
input x : f32[4, 8]
y = relu(x
# CHECK: {{^}}{{.*}}syntax-unclosed-paren-at-end.sh:7:9: error: '(' is not closed{{$}}
# CHECK-NEXT: {{^}}y = relu(x{{$}}
# CHECK-NEXT: {{^}}        ^{{$}}
