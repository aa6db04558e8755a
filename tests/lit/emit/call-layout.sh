# transpose (default: the axes reversed) and reshape (a -1 entry is
# inferred; the IR holds the full shape).
# RUN: %shardc %s --mesh 2x2 --emit ir | FileCheck %s
mesh dp, tp
input x : f32[2, 4, 8]
input m : f32[4, 8]
# CHECK: {{^}}%t1 = transpose %x {perm = [2, 1, 0]} : f32[8, 4, 2]{{$}}
# CHECK-NEXT: {{^}}%t2 = transpose %x {perm = [0, 2, 1]} : f32[2, 8, 4]{{$}}
# CHECK-NEXT: {{^}}%t3 = transpose %x {perm = [1, 0, 2]} : f32[4, 2, 8]{{$}}
# CHECK-NEXT: {{^}}%t4 = transpose %m {perm = [1, 0]} : f32[8, 4]{{$}}
t1 = transpose(x)
t2 = transpose(x, [0, 2, 1])
t3 = transpose(x, perm = [1, 0, 2])
t4 = transpose(m)
# CHECK-NEXT: {{^}}%r1 = reshape %x {shape = [8, 8]} : f32[8, 8]{{$}}
# CHECK-NEXT: {{^}}%r2 = reshape %x {shape = [8, 8]} : f32[8, 8]{{$}}
# CHECK-NEXT: {{^}}%r3 = reshape %x {shape = [2, 32]} : f32[2, 32]{{$}}
# CHECK-NEXT: {{^}}%r4 = reshape %x {shape = [64]} : f32[64]{{$}}
# CHECK-NEXT: {{^}}%r5 = reshape %m {shape = [2, 2, 8]} : f32[2, 2, 8]{{$}}
r1 = reshape(x, [8, 8])
r2 = reshape(x, [-1, 8])
r3 = reshape(x, [2, -1])
r4 = reshape(x, shape = [-1])
r5 = reshape(m, [2, -1, 8])
output t1
