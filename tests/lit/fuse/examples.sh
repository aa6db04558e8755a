# The groups of the two-layer MLP's training step on 2x2: the first
# matmul with its bias add in cuBLASLt's epilogue (the bias add's result
# stored: gelu and the backward's gelu_grad read it, so in f32 gelu stays
# a kernel of its own; a 16-bit one joins the epilogue, the result stored
# as cuBLASLt's GELU input matrix: lit/fakecuda/gelu-aux.sh), mse with the
# loss's scaling, gelu's gradient fused
# into the sum over the batch that makes the bias's gradient, and the
# three sgd updates in one multi-tensor kernel. The backward's transposes
# are folded into its matmuls (trans = a, trans = b: passes/fold.c), none
# of them a kernel. --emit fused-ir parses
# back to the partitioned program, and prints the same again.
# RUN: %shardc %S/../../../examples/mlp.sh --mesh 2x2 --emit fused-ir > %t.ir
# RUN: FileCheck %s < %t.ir
# RUN: %shardc %S/../../../examples/mlp.sh --mesh 2x2 --emit sharded-ir > %t.sharded
# RUN: %shardc %t.ir --emit sharded-ir | diff %t.sharded -
# RUN: %shardc %t.ir --emit fused-ir | diff %t.ir -
# CHECK: // kernel k0_matmul_add: matmul [32, 1024] x [1024, 2048], epilogue bias (cuBLASLt); reads %x, %w1, %b1; stores %1
# CHECK-NEXT: %0 = matmul %x, %w1 : f32[32, 2048] auto(dp, tp)  // k0_matmul_add{{$}}
# CHECK-NEXT: %1 = add %0, %b1 : f32[32, 2048] auto(dp, tp)  // k0_matmul_add, stored
# CHECK: // kernel k1_gelu: elementwise over [32, 2048]; reads %1; stores %h
# CHECK: // kernel k2_mse_mul: mse over [32, 1024]; reads %out, %y; stores %5
# CHECK: %3 = mse %out, %y : f32[]  // k2_mse_mul{{$}}
# The loss's gradient starts from one constant (1 times the mean's 1 / N,
# folded by simplify: no kernel of one element), the literal of the
# backward's first kernel (no fill of its own on the GPU).
# CHECK: %6 = const {value = 3.0517578125e-05} : f32[] auto() phase backward  // k3_sub_mul{{$}}
# CHECK-NEXT: // kernel k3_sub_mul: elementwise over [32, 1024]; reads %out, %y; stores %8
# CHECK: %9 = matmul %8, %w2 {trans = b} : f32[32, 2048] auto(dp, tp) phase backward{{$}}
# CHECK: %12 = matmul %h, %8 {trans = a} : f32[2048, 1024] auto(tp, _) partial(dp) phase backward{{$}}
# CHECK: // kernel k5_gelu_grad_sum: sum over axis 0 of [32, 2048]; reads %1, %9; stores %14, %15
# CHECK: %17 = matmul %x, %14 {trans = a} : f32[1024, 2048] auto(_, tp) partial(dp) phase backward{{$}}
# CHECK: // kernel k6_sgd_x3: multi-tensor elementwise over 3 domains [1024, 2048], [2048], [2048, 1024]; reads %w1, %22, %b1, %21, %w2, %20; stores %23, %24, %25
# CHECK-NEXT: %23 = sgd %w1, %22 {{.*}} // k6_sgd_x3, stored
# CHECK-NEXT: %24 = sgd %b1, %21 {{.*}} // k6_sgd_x3, stored
# CHECK-NEXT: %25 = sgd %w2, %20 {{.*}} // k6_sgd_x3, stored
# CHECK-NOT: transpose
# CHECK-NOT: // kernel
