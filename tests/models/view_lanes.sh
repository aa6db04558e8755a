# view_lanes.sh: elementwise kernels with concats (passes/fuse.c's
# find_views) whose vectors of 4 f32 take their views at once
# (codegen/cuda_tile.c's view_vectors: one aligned load of a vector a
# read, one branch of a concat for the vector) or lane by lane where they
# cannot: p's halves of 6 and 10 along the last dim (a vector would
# straddle them), r's branch multiplied by a column broadcast along the
# last dim (its lanes read one element), and t's halves of 8 (at once,
# the transpose of z a kernel of its own), with their gradients (the
# halves padded with zeros). test_kernel_emulate runs each kernel against
# the CPU backend.
mesh a
input x : f32[4, 8, 16]
input y : f32[4, 8, 16]
input b : f32[4, 8, 1]
input z : f32[4, 16, 8]
param w : f32[16, 16] = normal(0.3)
h = x @ w
p = concat([h[:, :, 10:], h[:, :, :10]], axis = -1) * y
r = concat([-h[:, :, 8:], h[:, :, :8] * b], axis = -1) + x
t = concat([transpose(z, [0, 2, 1])[:, :, 8:], h[:, :, :8]], axis = -1) * y
loss = mean(p * p) + mean(r * r) + mean(t * t)
output p, r, t, loss
train loss with sgd(lr = 0.1)
