# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# uniform on an i32 param draws integers in [LO, HI): fractional bounds were
# floored (uniform(-0.5, 0.5) made every element -1), so they are an error,
# as are bounds outside i32. Whole bounds compile and draw from [LO, HI).
# RUN: sed 's/uniform(-0.5, 0.5)/uniform(0, 1e10)/' %s > %t.big.sh
# RUN: %expect 1 %shardc %t.big.sh --mesh 2x2 -o %t.plan 2>&1 | FileCheck %s --check-prefix=BIG
# RUN: test ! -e %t.plan
# RUN: sed 's/uniform(-0.5, 0.5)/uniform(-2, 3)/' %s > %t.ok.sh
# RUN: %shardc %t.ok.sh --mesh 2x2 -o %t.plan
# RUN: %shardrun %t.plan | FileCheck %s --check-prefix=OK
mesh dp, tp
param w : i32[8, 8] shard(dp, tp) = uniform(-0.5, 0.5)
output w
# CHECK: {{^}}{{.*}}init-uniform-i32-param.sh:13:37: error: uniform for an i32 param needs whole-number bounds (it makes integers in [LO, HI)), got uniform(-0.5, 0.5){{$}}
# CHECK-NEXT: {{^}}param w : i32[8, 8] shard(dp, tp) = uniform(-0.5, 0.5){{$}}
# CHECK-NEXT: {{^}}                                    ^{{$}}
# BIG: {{.*}}.big.sh:13:37: error: uniform for an i32 param needs bounds within i32 (-2147483648 to 2147483648), got uniform(0, 1e+10){{$}}
# OK: w i32[8, 8]: mean {{.*}} min -2 max 2{{$}}
