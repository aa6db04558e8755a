# concat_views.sh: concats fused into elementwise kernels with their
# branches (passes/fuse.c's find_views), and their gradients (each
# narrow's padded with zeros, the pads added): RoPE's halves rotated
# along the last dim of rows split over dp and heads over tp; three pieces
# along a middle dim, one scaled by a broadcast column; a concat inside a
# concat; RoPE of heads transposed from [B, S, H, E] (the transpose in
# the kernel, reading its operand where it moves the element), a
# transpose of three dims read by a sub, one that cycles three dims, and
# one of a value made in the
# kernel, stored at the places it moves the elements to (the RoPE
# gradients' too, transposed back for the matmul). test_kernel_emulate
# runs it in f32 and in bf16 (--dtype), each kernel against the CPU
# backend's ops.
mesh dp, tp
input  x  : f32[4, 4, 8, 12] shard(dp, tp, _, _)
input  c  : f32[8, 12]
input  s  : f32[8, 12]
input  v  : f32[4, 6, 12]    shard(dp, _, _)
input  y  : f32[4, 8, 4, 12] shard(dp, _, tp, _)
param  w  : f32[12, 12] = normal(0.3)
param  u  : f32[6, 1]   = normal(1.0)
h = x @ w
r = h * c + concat([-h[:, :, :, 6:], h[:, :, :, :6]], axis = -1) * s
p = v @ w
m = concat([p[:, 4:, :] * u[4:, :], p[:, :2, :], 0.5 * p[:, 2:4, :] + 1.0], axis = 1)
n = concat([concat([p[:, :, 9:], -p[:, :, :3]], axis = -1), tanh(p[:, :, 3:9])], axis = -1)
k = transpose(y @ w, [0, 2, 1, 3])
q = k * c + concat([-k[:, :, :, 6:], k[:, :, :, :6]], axis = -1) * s
t = transpose(p, [1, 0, 2]) - 0.5
o = transpose(tanh(p) * 2.0, [0, 2, 1])
z = transpose(sigmoid(y) + 1.0, [1, 2, 0, 3])
j = transpose(y, [2, 0, 1, 3]) - 1.0
loss = mean(r * r) + mean(m * n) + mean(q * q) + mean(t * t) + mean(o) + mean(z * z) + mean(j * j)
output loss, r
train loss with sgd(lr = 0.1)
