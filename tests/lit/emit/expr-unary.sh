# Unary minus: binds tighter than * and @, nests, and folds into literals.
# RUN: %shardc %s --mesh 2x2 --emit ir | FileCheck %s
mesh dp, tp
input a : f32[8, 16]
input b : f32[8, 16]
input w : f32[16, 16]
# CHECK: {{^}}%r1 = neg %a : f32[8, 16]{{$}}
r1 = -a
# -a * b is (-a) * b
# CHECK-NEXT: [[N:%[0-9]+]] = neg %a : f32[8, 16]
# CHECK-NEXT: %r2 = mul [[N]], %b : f32[8, 16]
r2 = -a * b
# CHECK-NEXT: [[NB:%[0-9]+]] = neg %b : f32[8, 16]
# CHECK-NEXT: %r3 = sub %a, [[NB]] : f32[8, 16]
r3 = a - -b
# CHECK-NEXT: [[S:%[0-9]+]] = add %a, %b : f32[8, 16]
# CHECK-NEXT: %r4 = neg [[S]] : f32[8, 16]
r4 = -(a + b)
# A negated literal is a constant, not a neg op.
# CHECK-NEXT: [[M2:%[0-9]+]] = const {value = -2.0} : f32[]
# CHECK-NEXT: %r5 = mul %a, [[M2]] : f32[8, 16]
r5 = a * -2
# CHECK-NEXT: %r6 = neg %a : f32[8, 16]
r6 = neg(a)
# CHECK-NEXT: [[N3:%[0-9]+]] = neg %a : f32[8, 16]
# CHECK-NEXT: %r7 = neg [[N3]] : f32[8, 16]
r7 = --a
# -a @ w is (-a) @ w
# CHECK-NEXT: [[N4:%[0-9]+]] = neg %a : f32[8, 16]
# CHECK-NEXT: %r8 = matmul [[N4]], %w : f32[8, 16]
r8 = -a @ w
output r1, r2, r3, r4, r5, r6, r7, r8
