# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# dp cannot split two dimensions.
mesh dp, tp
input x : f32[4, 8] shard(dp, dp)
# CHECK: {{^}}{{.*}}shard-axis-twice.sh:5:31: error: mesh axis 'dp' appears twice in the annotation of 'x'{{$}}
# CHECK-NEXT: {{^}}input x : f32[4, 8] shard(dp, dp){{$}}
# CHECK-NEXT: {{^}}                              ^{{$}}
