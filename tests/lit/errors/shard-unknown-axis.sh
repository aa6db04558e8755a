# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# pp is not an axis of the mesh.
mesh dp, tp
input x : f32[4, 8] shard(_, pp)
# CHECK: {{^}}{{.*}}shard-unknown-axis.sh:5:30: error: unknown mesh axis 'pp'{{$}}
# CHECK-NEXT: {{^}}input x : f32[4, 8] shard(_, pp){{$}}
# CHECK-NEXT: {{^}}                             ^{{$}}
