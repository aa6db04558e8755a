# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# A scalar q has no head dimension: refused where it is written (the
# frontend read the dimension before index -1 once, fuzz_frontend's CI
# finding, its input kept in tests/fuzz/corpus/frontend).
mesh dp, tp
input x : f32[]
o = attention(x, x, x, scale = 0.5)
# CHECK: {{^}}{{.*}}attention-scalar-q.sh:8:5: error: attention needs q of rank 2 or more, got f32[]{{$}}
# CHECK-NEXT: {{^}}o = attention(x, x, x, scale = 0.5){{$}}
# CHECK-NEXT: {{^}}    ^{{$}}
