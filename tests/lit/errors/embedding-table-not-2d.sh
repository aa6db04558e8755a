# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# The table is [V, D].
mesh dp, tp
param table : f32[100, 16, 2] = normal(0.02)
input ids : i32[4, 8]
e = embedding(table, ids)
# CHECK: {{^}}{{.*}}embedding-table-not-2d.sh:7:5: error: embedding table must be a 2-D floating-point tensor, got f32[100, 16, 2]{{$}}
# CHECK-NEXT: {{^}}e = embedding(table, ids){{$}}
# CHECK-NEXT: {{^}}    ^{{$}}
