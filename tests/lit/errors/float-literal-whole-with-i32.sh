# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# 2.0 is a float literal even though its value is whole.
mesh dp, tp
input ids : i32[4, 8]
y = ids + 2.0
# CHECK: {{^}}{{.*}}float-literal-whole-with-i32.sh:6:9: error: the number 2.0 cannot be used with an i32 tensor (cast the tensor){{$}}
# CHECK-NEXT: {{^}}y = ids + 2.0{{$}}
# CHECK-NEXT: {{^}}        ^{{$}}
