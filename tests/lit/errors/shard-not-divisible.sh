# RUN: %expect 1 %shardc %s --mesh 2x4 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# 6 does not split over tp of size 4.
mesh dp, tp
param w : f32[8, 6] shard(_, tp) = zeros
# CHECK: {{^}}{{.*}}shard-not-divisible.sh:5:30: error: dimension 1 of 'w' has size 6, which axis tp (size 4) does not divide{{$}}
# CHECK-NEXT: {{^}}param w : f32[8, 6] shard(_, tp) = zeros{{$}}
# CHECK-NEXT: {{^}}                             ^{{$}}
