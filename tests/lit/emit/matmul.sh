# `@` as NumPy's matmul: leading dims broadcast (batched), a 1-D operand
# loses its row (left) or column (right) dimension.
# RUN: %shardc %s --mesh 2x2 --emit ir | FileCheck %s
mesh dp, tp
input a : f32[2, 4, 8] shard(dp, _, _)
input b : f32[8, 16] shard(_, tp)
input q : f32[16, 8]
input c : f32[2, 8, 16]
input d : f32[3, 1, 4, 8]
input e : f32[5, 8, 6]
input v : f32[8]
input u : f32[4]
# CHECK: {{^}}%m1 = matmul %a, %b : f32[2, 4, 16]{{$}}
# CHECK-NEXT: {{^}}%m2 = matmul %a, %c : f32[2, 4, 16]{{$}}
# CHECK-NEXT: {{^}}%m3 = matmul %d, %e : f32[3, 5, 4, 6]{{$}}
# CHECK-NEXT: {{^}}%m4 = matmul %a, %v : f32[2, 4]{{$}}
# CHECK-NEXT: {{^}}%m5 = matmul %v, %b : f32[16]{{$}}
# CHECK-NEXT: {{^}}%m6 = matmul %q, %c : f32[2, 16, 16]{{$}}
# CHECK-NEXT: {{^}}%m7 = matmul %u, %a : f32[2, 8]{{$}}
m1 = a @ b
m2 = a @ c
m3 = d @ e
m4 = a @ v
m5 = v @ b
m6 = q @ c
m7 = u @ a
output m1
