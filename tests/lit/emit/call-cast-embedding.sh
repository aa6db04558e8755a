# cast to each dtype; embedding [V, D] with i32 ids [...] gives [..., D].
# RUN: %shardc %s --mesh 2x2 --emit ir | FileCheck %s
mesh dp, tp
let V = 32, D = 8
input x : f32[2, 4]
input ids : i32[2, 4] shard(dp, _)
input lab : i32[2]
param tab : f32[V, D] shard(_, tp) = normal(0.02)
# CHECK: {{^}}%c1 = cast %x {dtype = bf16} : bf16[2, 4]{{$}}
# CHECK-NEXT: {{^}}%c2 = cast %ids {dtype = f32} : f32[2, 4]{{$}}
# CHECK-NEXT: {{^}}%c3 = cast %x {dtype = i32} : i32[2, 4]{{$}}
# CHECK-NEXT: {{^}}%c4 = cast %x {dtype = f16} : f16[2, 4]{{$}}
c1 = cast(x, bf16)
c2 = cast(ids, f32)
c3 = cast(x, dtype = i32)
c4 = cast(x, f16)
# CHECK-NEXT: {{^}}%e1 = embedding %tab, %ids : f32[2, 4, 8]{{$}}
# CHECK-NEXT: {{^}}%e2 = embedding %tab, %lab : f32[2, 8]{{$}}
e1 = embedding(tab, ids)
e2 = embedding(tab, lab)
# A literal cast is a const of that dtype.
# CHECK-NEXT: [[H:%[0-9]+]] = const {value = 0.5} : bf16[]
# CHECK-NEXT: {{^}}%c5 = mul %c1, [[H]] : bf16[2, 4]{{$}}
c5 = c1 * cast(0.5, bf16)
output e1
