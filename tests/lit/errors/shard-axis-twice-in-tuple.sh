# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# Nor split one dimension twice.
mesh dp, tp
input x : f32[4, 8] shard((dp, dp), _)
# CHECK: {{^}}{{.*}}shard-axis-twice-in-tuple.sh:5:32: error: mesh axis 'dp' appears twice in the annotation of 'x'{{$}}
# CHECK-NEXT: {{^}}input x : f32[4, 8] shard((dp, dp), _){{$}}
# CHECK-NEXT: {{^}}                               ^{{$}}
