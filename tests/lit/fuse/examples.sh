# The groups of the two-layer MLP's training step on 2x2: the first
# matmul with its bias add in cuBLASLt's epilogue (the bias add's result
# stored: gelu and the backward's gelu_grad read it, so gelu stays a
# kernel of its own), mse with the loss's scaling, gelu's gradient fused
# into the sum over the batch that makes the bias's gradient, and the
# three sgd updates in one multi-tensor kernel. --emit fused-ir parses
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
# CHECK: // kernel k2_mse_mul: mse over [32, 1024]; reads %out, %y, %4; stores %5
# CHECK: %3 = mse %out, %y : f32[]  // k2_mse_mul{{$}}
# CHECK: // kernel k6_gelu_grad_sum: sum over axis 0 of [32, 2048]; reads %1, %12; stores %18, %19
# CHECK: // kernel k7_sgd_x3: multi-tensor elementwise over 3 domains [1024, 2048], [2048], [2048, 1024]; reads %w1, %27, %b1, %26, %w2, %25; stores %28, %29, %30
# CHECK-NEXT: %28 = sgd %w1, %27 {{.*}} // k7_sgd_x3, stored
# CHECK-NEXT: %29 = sgd %b1, %26 {{.*}} // k7_sgd_x3, stored
# CHECK-NEXT: %30 = sgd %w2, %25 {{.*}} // k7_sgd_x3, stored
# CHECK-NOT: // kernel
