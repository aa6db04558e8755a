# attention (causal defaults to true) and the scalar losses.
# RUN: %shardc %s --mesh 2x2 --emit ir | FileCheck %s
mesh dp, tp
input q : f32[2, 4, 16, 8] shard(dp, tp, _, _)
input k : f32[2, 4, 12, 8]
input v : f32[2, 4, 12, 6]
input y : f32[2, 4, 16, 6]
input logits : f32[8, 32]
input labels : i32[8]
# CHECK: {{^}}%a1 = attention %q, %k, %v {causal = true} : f32[2, 4, 16, 6]{{$}}
# CHECK-NEXT: {{^}}%a2 = attention %q, %k, %v {causal = false} : f32[2, 4, 16, 6]{{$}}
# CHECK-NEXT: {{^}}%a3 = attention %q, %k, %v {causal = true} : f32[2, 4, 16, 6]{{$}}
a1 = attention(q, k, v)
a2 = attention(q, k, v, causal = false)
a3 = attention(q, k, v, causal = true)
# CHECK-NEXT: {{^}}%l1 = mse %a1, %y : f32[]{{$}}
# CHECK-NEXT: {{^}}%l2 = cross_entropy %logits, %labels : f32[]{{$}}
l1 = mse(a1, y)
l2 = cross_entropy(logits, labels)
# CHECK-NEXT: {{^}}%l = add %l1, %l2 : f32[]{{$}}
l = l1 + l2
output l
