# RUN: %expect 1 %shardc %s --mesh 2x4 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# The constraint on an assignment is checked too.
mesh dp, tp
input x : f32[4, 6]
h = relu(x) shard(_, tp)
# CHECK: {{^}}{{.*}}shard-constraint-not-divisible.sh:6:22: error: dimension 1 of 'h' has size 6, which axis tp (size 4) does not divide{{$}}
# CHECK-NEXT: {{^}}h = relu(x) shard(_, tp){{$}}
# CHECK-NEXT: {{^}}                     ^{{$}}
