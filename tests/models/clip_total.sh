# clip's norm as one kernel (passes/fuse.h's TOTAL groups): params of
# several shapes, w1 and w2 of 20480 elements (two chunks of 16384 each in
# the kernel), the gain g of one; on 1x1 one kernel sums every param's
# squares and computes the factor, on 2x2 the sums partial over tp and dp
# are one kernel before their all-reduce (passes/join_sums.c).
# test_kernel_emulate runs it in f32 and in bf16 (--dtype).
mesh dp, tp
input  x  : f32[8, 64]    shard(dp, _)
input  y  : f32[8, 64]    shard(dp, _)
param  w1 : f32[64, 320]  shard(_, tp) = normal(0.05)
param  b1 : f32[320]      shard(tp)    = zeros
param  w2 : f32[320, 64]  shard(tp, _) = normal(0.05)
param  g  : f32[64]                    = ones
out  = (gelu(x @ w1 + b1) @ w2) * g
loss = mse(out, y)
output loss
train loss with adamw(lr = 0.01, clip = 0.5)
