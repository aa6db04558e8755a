# i32_reduce.sh: amax and sum of i32 over each axis, with and without
# keepdims, split over dp (test_kernel_emulate): each a kernel of its own,
# a thread per result element, against the CPU backend's bits (sum wraps).
mesh dp

input a : i32[4, 6, 5] shard(dp, _, _)

s = sum(a, axis = 1)
m = amax(a, axis = 2, keepdims = true)
t = amax(a, axis = 0)
u = sum(a, axis = 2, keepdims = true)
output s, m, t, u
