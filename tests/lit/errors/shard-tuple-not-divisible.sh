# RUN: %expect 1 %shardc %s --mesh 2x4 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# 12 does not split over dp x tp = 8.
mesh dp, tp
input x : f32[12, 8] shard((dp, tp), _)
# CHECK: {{^}}{{.*}}shard-tuple-not-divisible.sh:5:28: error: dimension 0 of 'x' has size 12, which axes (dp, tp) (sizes 2 x 4 = 8) do not divide{{$}}
# CHECK-NEXT: {{^}}input x : f32[12, 8] shard((dp, tp), _){{$}}
# CHECK-NEXT: {{^}}                           ^{{$}}
