# sum/mean/amax: a negative axis is normalised, keepdims keeps a size-1 dim,
# and without an axis the reduction chains over every axis, last first.
# softmax defaults to the last axis.
# RUN: %shardc %s --mesh 2x2 --emit ir | FileCheck %s
mesh dp, tp
input x : f32[2, 4, 8] shard(dp, _, tp)
input m : f32[4, 8]
# CHECK: {{^}}%s1 = sum %x {axis = 2, keepdims = false} : f32[2, 4]{{$}}
s1 = sum(x, axis = -1)
# CHECK-NEXT: {{^}}%s2 = mean %x {axis = 1, keepdims = true} : f32[2, 1, 8]{{$}}
s2 = mean(x, axis = 1, keepdims = true)
# CHECK-NEXT: {{^}}%s3 = amax %x {axis = 0, keepdims = false} : f32[4, 8]{{$}}
s3 = amax(x, axis = -3)
# CHECK-NEXT: {{^}}%s4 = sum %x {axis = 0, keepdims = false} : f32[4, 8]{{$}}
s4 = sum(x, 0, false)
# CHECK-NEXT: [[A:%[0-9]+]] = sum %x {axis = 2, keepdims = false} : f32[2, 4]{{$}}
# CHECK-NEXT: [[B:%[0-9]+]] = sum [[A]] {axis = 1, keepdims = false} : f32[2]{{$}}
# CHECK-NEXT: {{^}}%s5 = sum [[B]] {axis = 0, keepdims = false} : f32[]{{$}}
s5 = sum(x)
# CHECK-NEXT: [[C:%[0-9]+]] = mean %x {axis = 2, keepdims = true} : f32[2, 4, 1]{{$}}
# CHECK-NEXT: [[D:%[0-9]+]] = mean [[C]] {axis = 1, keepdims = true} : f32[2, 1, 1]{{$}}
# CHECK-NEXT: {{^}}%s6 = mean [[D]] {axis = 0, keepdims = true} : f32[1, 1, 1]{{$}}
s6 = mean(x, keepdims = true)
# CHECK-NEXT: [[E:%[0-9]+]] = amax %m {axis = 1, keepdims = false} : f32[4]{{$}}
# CHECK-NEXT: {{^}}%s7 = amax [[E]] {axis = 0, keepdims = false} : f32[]{{$}}
s7 = amax(m)
# CHECK-NEXT: {{^}}%p1 = softmax %x {axis = 2} : f32[2, 4, 8]{{$}}
# CHECK-NEXT: {{^}}%p2 = softmax %x {axis = 1} : f32[2, 4, 8]{{$}}
# CHECK-NEXT: {{^}}%p3 = softmax %x {axis = 1} : f32[2, 4, 8]{{$}}
p1 = softmax(x)
p2 = softmax(x, axis = 1)
p3 = softmax(x, axis = -2)
output s1
