# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# q, k and v must share their leading dimensions.
mesh dp, tp
input q : f32[2, 16, 8]
input k : f32[4, 16, 8]
input v : f32[4, 16, 8]
o = attention(q, k, v)
# CHECK: {{^}}{{.*}}attention-leading-mismatch.sh:8:5: error: attention needs q, k and v with the same leading dimensions, got f32[2, 16, 8], f32[4, 16, 8] and f32[4, 16, 8]{{$}}
# CHECK-NEXT: {{^}}o = attention(q, k, v){{$}}
# CHECK-NEXT: {{^}}    ^{{$}}
