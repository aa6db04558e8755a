# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# q and k must share their last dimension.
mesh dp, tp
input q : f32[2, 16, 8]
input k : f32[2, 16, 4]
input v : f32[2, 16, 8]
o = attention(q, k, v)
# CHECK: {{^}}{{.*}}attention-head-dim-mismatch.sh:8:5: error: attention needs q and k with the same last dimension, got f32[2, 16, 8] and f32[2, 16, 4]{{$}}
# CHECK-NEXT: {{^}}o = attention(q, k, v){{$}}
# CHECK-NEXT: {{^}}    ^{{$}}
