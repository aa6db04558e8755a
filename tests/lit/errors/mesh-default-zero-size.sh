# RUN: %expect 1 %shardc %s --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# A default size of 0 in the model.
mesh dp = 2, tp = 0
input x : f32[4, 8]
# CHECK: {{^}}{{.*}}mesh-default-zero-size.sh:4:19: error: mesh axis 'tp' has size 0; sizes must be at least 1{{$}}
# CHECK-NEXT: {{^}}mesh dp = 2, tp = 0{{$}}
# CHECK-NEXT: {{^}}                  ^{{$}}
