# RUN: %expect 1 %shardc %s --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# '_' is an identifier, but in an annotation it means "not split", so it cannot name an axis.
mesh dp, _
input x : f32[4, 8]
# CHECK: {{^}}{{.*}}mesh-axis-underscore.sh:4:10: error: '_' cannot name a mesh axis: in a shard annotation it means not split{{$}}
# CHECK-NEXT: {{^}}mesh dp, _{{$}}
# CHECK-NEXT: {{^}}         ^{{$}}
