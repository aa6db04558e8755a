# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# Three entries for a rank-2 tensor.
mesh dp, tp
input x : f32[4, 8] shard(dp, tp, _)
# CHECK: {{^}}{{.*}}shard-rank-mismatch.sh:5:21: error: the annotation of 'x' has 3 entries, but 'x' has rank 2{{$}}
# CHECK-NEXT: {{^}}input x : f32[4, 8] shard(dp, tp, _){{$}}
# CHECK-NEXT: {{^}}                    ^{{$}}
