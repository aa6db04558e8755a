# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# 0.5 has no i32 value.
mesh dp, tp
input ids : i32[4, 8]
y = ids * 0.5
# CHECK: {{^}}{{.*}}float-literal-with-i32.sh:6:9: error: the number 0.5 cannot be used with an i32 tensor (cast the tensor){{$}}
# CHECK-NEXT: {{^}}y = ids * 0.5{{$}}
# CHECK-NEXT: {{^}}        ^{{$}}
