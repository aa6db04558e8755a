# A norm of a matrix (passes/norm_cols.c): dy and x are [N, D] already,
# the gain's and bias's sums read them as they are, so a reshape of each
# to [P, R, D] comes before the chains (and of the statistics to [P, R,
# 1]); 64 rows on one rank are 4 runs of 16, 32 under dp 2 are 2.
# RUN: %shardc %s --mesh 1 --stop-after=bucket | FileCheck %s
# RUN: %shardc %s --mesh 2 --stop-after=bucket | FileCheck %s --check-prefix=DP
# RUN: %shardc %s --mesh 1 --emit fused-ir | FileCheck %s --check-prefix=FUSED
mesh dp
input x : f32[64, 32] shard(dp, _)
param w0 : f32[32, 32] = normal(0.3)
param g : f32[32] = ones
param b : f32[32] = zeros
param w : f32[32, 32] = normal(0.2)
h = tanh(x @ w0)
y = h + layernorm(h, g, b) @ w
loss = mean(y * y)
output loss
train loss with sgd(lr = 0.1)
# CHECK: %[[LN:[0-9]+]] = layernorm_dx %[[DY:[0-9]+]], %h, %[[MU:[0-9]+]], %[[RS:[0-9]+]], %g : f32[64, 32]
# CHECK-NEXT: = add %{{[0-9]+}}, %[[LN]] : f32[64, 32]
# CHECK-DAG: %[[DYR:[0-9]+]] = reshape %[[DY]] {shape = [4, 16, 32]} : f32[4, 16, 32]
# CHECK-DAG: %[[XR:[0-9]+]] = reshape %h {shape = [4, 16, 32]} : f32[4, 16, 32]
# CHECK-DAG: %[[MR:[0-9]+]] = reshape %[[MU]] {shape = [4, 16, 1]} : f32[4, 16, 1]
# CHECK: = sub %[[XR]], %[[MR]] : f32[4, 16, 32]
# CHECK: = sum %[[DYR]] {axis = 1, keepdims = false} : f32[4, 32]
# CHECK: = sum %{{[0-9]+}} {axis = 1, keepdims = false} : f32[4, 32]
# CHECK: = sum %{{[0-9]+}} {axis = 0, keepdims = false} : f32[32]
# CHECK: = sum %{{[0-9]+}} {axis = 0, keepdims = false} : f32[32]
# DP: = layernorm_dx %{{[0-9]+}}, %h, %{{[0-9]+}}, %{{[0-9]+}}, %g : f32[32, 32]
# DP: {shape = [2, 16, 32]} : f32[2, 16, 32]
# DP: = sum %{{[0-9]+}} {axis = 0, keepdims = false} : f32[32] auto(_) partial(dp)
# FUSED: layernorm_dx over the last axis of [64, 32] with two column sums over runs of its rows
