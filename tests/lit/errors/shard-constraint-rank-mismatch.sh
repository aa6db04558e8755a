# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# An assignment constraint needs one entry per dimension of the value.
mesh dp, tp
input x : f32[4, 8]
h = sum(x, axis = 1) shard(dp, tp)
# CHECK: {{^}}{{.*}}shard-constraint-rank-mismatch.sh:6:22: error: the annotation of 'h' has 2 entries, but 'h' has rank 1{{$}}
# CHECK-NEXT: {{^}}h = sum(x, axis = 1) shard(dp, tp){{$}}
# CHECK-NEXT: {{^}}                     ^{{$}}
