# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# k and v must have the same sequence length.
mesh dp, tp
input q : f32[2, 16, 8]
input k : f32[2, 16, 8]
input v : f32[2, 12, 8]
o = attention(q, k, v, causal = false)
# CHECK: {{^}}{{.*}}attention-kv-length-mismatch.sh:8:5: error: attention needs k and v with the same sequence length, got f32[2, 16, 8] and f32[2, 12, 8]{{$}}
# CHECK-NEXT: {{^}}o = attention(q, k, v, causal = false){{$}}
# CHECK-NEXT: {{^}}    ^{{$}}
