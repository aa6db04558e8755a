# Literals: a number broadcasts to any shape and takes the tensor's dtype
# (bf16, i32); literal subexpressions fold to one const; let constants are
# numbers in tensor expressions.
# RUN: %shardc %s --mesh 2x2 --emit ir | FileCheck %s
mesh dp, tp
let K = 4
input a : f32[8, 16]
input h : bf16[8, 16]
input n : i32[8]
# CHECK: [[C2:%[0-9]+]] = const {value = 2.0} : bf16[]
# CHECK-NEXT: %r1 = mul %h, [[C2]] : bf16[8, 16]
r1 = h * 2
# CHECK-NEXT: [[CH:%[0-9]+]] = const {value = 0.5} : bf16[]
# CHECK-NEXT: %r2 = add [[CH]], %h : bf16[8, 16]
r2 = 0.5 + h
# x * (2 + 3) is one const 5.0 (the next line is already r3's mul).
# CHECK-NEXT: [[C5:%[0-9]+]] = const {value = 5.0} : f32[]
# CHECK-NEXT: %r3 = mul %a, [[C5]] : f32[8, 16]
r3 = a * (2 + 3)
# CHECK-NEXT: [[CK:%[0-9]+]] = const {value = 4.0} : f32[]
# CHECK-NEXT: %r4 = mul %a, [[CK]] : f32[8, 16]
r4 = a * K
# CHECK-NEXT: [[CI:%[0-9]+]] = const {value = 1.0} : i32[]
# CHECK-NEXT: %r5 = add %n, [[CI]] : i32[8]
r5 = n + 1
# (K * 2 - 1) / 2 folds to 3.5; the division of numbers is not integer division.
# CHECK-NEXT: [[C35:%[0-9]+]] = const {value = 3.5} : f32[]
# CHECK-NEXT: %r6 = sub %a, [[C35]] : f32[8, 16]
r6 = a - (K * 2 - 1) / 2
# a * 2 * 3 is (a * 2) * 3: nothing to fold.
# CHECK-NEXT: [[D2:%[0-9]+]] = const {value = 2.0} : f32[]
# CHECK-NEXT: [[T:%[0-9]+]] = mul %a, [[D2]] : f32[8, 16]
# CHECK-NEXT: [[D3:%[0-9]+]] = const {value = 3.0} : f32[]
# CHECK-NEXT: %r7 = mul [[T]], [[D3]] : f32[8, 16]
r7 = a * 2 * 3
# CHECK-NEXT: [[E:%[0-9]+]] = const {value = 1e-05} : f32[]
# CHECK-NEXT: %r8 = add %a, [[E]] : f32[8, 16]
r8 = a + 1e-5
output r1, r2, r3, r4, r5, r6, r7, r8
