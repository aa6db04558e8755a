# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# Embedding ids must be integers.
mesh dp, tp
param table : f32[100, 16] = normal(0.02)
input ids : f32[4, 8]
e = embedding(table, ids)
# CHECK: {{^}}{{.*}}embedding-ids-not-i32.sh:7:5: error: embedding ids must be i32, got f32[4, 8]{{$}}
# CHECK-NEXT: {{^}}e = embedding(table, ids){{$}}
# CHECK-NEXT: {{^}}    ^{{$}}
