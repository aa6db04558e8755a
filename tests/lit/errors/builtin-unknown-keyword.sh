# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# sum takes axis, not axes.
mesh dp, tp
input x : f32[4, 8]
y = sum(x, axes = 1)
# CHECK: {{^}}{{.*}}builtin-unknown-keyword.sh:6:12: error: 'sum' has no argument named 'axes' (its arguments: x, axis, keepdims){{$}}
# CHECK-NEXT: {{^}}y = sum(x, axes = 1){{$}}
# CHECK-NEXT: {{^}}           ^{{$}}
