# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# return belongs in a block.
mesh dp, tp
input x : f32[4, 8]
return relu(x)
# CHECK: {{^}}{{.*}}return-outside-block.sh:6:1: error: 'return' outside a block{{$}}
# CHECK-NEXT: {{^}}return relu(x){{$}}
# CHECK-NEXT: {{^}}^{{$}}
