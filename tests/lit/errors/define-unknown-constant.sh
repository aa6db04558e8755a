# RUN: %expect 1 %shardc %s --mesh 2x2 -D Q=3 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# -D Q=3 names no constant of the model.
mesh dp, tp
let B = 4
input x : f32[B, 8]
# CHECK: {{^}}{{.*}}define-unknown-constant.sh: error: -D Q: the model has no constant 'Q'{{$}}
# CHECK-NOT: {{.}}
