# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# A string runs to the end of the line.
mesh dp, tp
input x : f32[4, 8]
y = cast(x, "f16)
# CHECK: {{^}}{{.*}}syntax-unterminated-string.sh:6:13: error: string is not closed before the end of the line{{$}}
# CHECK-NEXT: {{^}}y = cast(x, "f16){{$}}
# CHECK-NEXT: {{^}}            ^{{$}}
