# The elementwise calls: one operand, and max/min/pow broadcasting by NumPy
# rules (a literal takes the tensor's dtype, numbers fold).
# RUN: %shardc %s --mesh 2x2 --emit ir | FileCheck %s
mesh dp, tp
input x : f32[4, 8] shard(dp, _)
input v : f32[8]
input c : f32[4, 1]
# CHECK: {{^}}%u1 = relu %x : f32[4, 8]{{$}}
# CHECK-NEXT: {{^}}%u2 = gelu %x : f32[4, 8]{{$}}
# CHECK-NEXT: {{^}}%u3 = silu %x : f32[4, 8]{{$}}
# CHECK-NEXT: {{^}}%u4 = tanh %x : f32[4, 8]{{$}}
# CHECK-NEXT: {{^}}%u5 = sigmoid %x : f32[4, 8]{{$}}
# CHECK-NEXT: {{^}}%u6 = exp %x : f32[4, 8]{{$}}
# CHECK-NEXT: {{^}}%u7 = log %x : f32[4, 8]{{$}}
# CHECK-NEXT: {{^}}%u8 = sqrt %x : f32[4, 8]{{$}}
# CHECK-NEXT: {{^}}%u9 = rsqrt %x : f32[4, 8]{{$}}
# CHECK-NEXT: {{^}}%u10 = neg %x : f32[4, 8]{{$}}
# CHECK-NEXT: {{^}}%u11 = abs %x : f32[4, 8]{{$}}
u1 = relu(x)
u2 = gelu(x)
u3 = silu(x)
u4 = tanh(x)
u5 = sigmoid(x)
u6 = exp(x)
u7 = log(x)
u8 = sqrt(x)
u9 = rsqrt(x)
u10 = neg(x)
u11 = abs(x)
# CHECK-NEXT: {{^}}%b1 = max %x, %v : f32[4, 8]{{$}}
# CHECK-NEXT: {{^}}%b2 = min %c, %v : f32[4, 8]{{$}}
# CHECK-NEXT: [[Z:%[0-9]+]] = const {value = 0.0} : f32[]
# CHECK-NEXT: {{^}}%b3 = max %x, [[Z]] : f32[4, 8]{{$}}
# CHECK-NEXT: [[TWO:%[0-9]+]] = const {value = 2.0} : f32[]
# CHECK-NEXT: {{^}}%b4 = pow %x, [[TWO]] : f32[4, 8]{{$}}
# CHECK-NEXT: {{^}}%b5 = add %x, %v : f32[4, 8]{{$}}
# CHECK-NEXT: {{^}}%b6 = mul %c, %x : f32[4, 8]{{$}}
b1 = max(x, v)
b2 = min(c, v)
b3 = max(x, 0)
b4 = pow(x, 2)
b5 = x + v
b6 = c * x
# Calls of numbers fold: exp(0) + max(1, 2) is 3.
# CHECK-NEXT: [[THREE:%[0-9]+]] = const {value = 3.0} : f32[]
# CHECK-NEXT: {{^}}%b7 = mul %x, [[THREE]] : f32[4, 8]{{$}}
b7 = x * (exp(0) + max(1, 2))
output u1, b1
