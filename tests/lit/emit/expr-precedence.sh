# Operator precedence: + - below * / @ (one level, left-associative), unary
# minus above them, parentheses first.
# RUN: %shardc %s --mesh 2x2 --emit ir | FileCheck %s
mesh dp, tp
input a : f32[8, 16] shard(dp, _)
input b : f32[8, 16]
input c : f32[8, 16]
input w : f32[16, 16]

# CHECK: [[T0:%[0-9]+]] = mul %b, %c : f32[8, 16]
# CHECK-NEXT: %r1 = add %a, [[T0]] : f32[8, 16]
r1 = a + b * c
# CHECK-NEXT: [[T1:%[0-9]+]] = div %b, %c : f32[8, 16]
# CHECK-NEXT: %r2 = sub %a, [[T1]] : f32[8, 16]
r2 = a - b / c
# `@` shares the level of `*`: (a * b) @ w, then (a @ w) * b.
# CHECK-NEXT: [[T2:%[0-9]+]] = mul %a, %b : f32[8, 16]
# CHECK-NEXT: %r3 = matmul [[T2]], %w : f32[8, 16]
r3 = a * b @ w
# CHECK-NEXT: [[T3:%[0-9]+]] = matmul %a, %w : f32[8, 16]
# CHECK-NEXT: %r4 = mul [[T3]], %b : f32[8, 16]
r4 = a @ w * b
# CHECK-NEXT: [[T4:%[0-9]+]] = add %a, %b : f32[8, 16]
# CHECK-NEXT: %r5 = mul [[T4]], %c : f32[8, 16]
r5 = (a + b) * c
# Left associativity.
# CHECK-NEXT: [[T5:%[0-9]+]] = sub %a, %b : f32[8, 16]
# CHECK-NEXT: %r6 = sub [[T5]], %c : f32[8, 16]
r6 = a - b - c
# CHECK-NEXT: [[T6:%[0-9]+]] = div %a, %b : f32[8, 16]
# CHECK-NEXT: %r7 = mul [[T6]], %c : f32[8, 16]
r7 = a / b * c
# CHECK-NEXT: [[T7:%[0-9]+]] = add %b, %c : f32[8, 16]
# CHECK-NEXT: %r8 = sub %a, [[T7]] : f32[8, 16]
r8 = a - (b + c)
output r1, r2, r3, r4, r5, r6, r7, r8
