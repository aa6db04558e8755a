# RUN: %expect 1 %shardc %s --mesh 2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# arange(N) needs N >= 1 (a tensor has no dimension of size 0).
mesh dp
let N = 0
ids = arange(N)
output ids
# CHECK: {{^}}{{.*}}arange-empty.sh:6:14: error: arange needs a length of at least 1, got 0{{$}}
