# i32_div.sh: division of i32 (index arithmetic), split over dp
# (test_kernel_emulate): by a value, each a kernel of its own,
# broadcasting as NumPy does, against the CPU backend's bits (C's
# truncation toward zero, INT32_MIN / -1 giving INT32_MIN; the test fills
# the divisors without 0); by a const that is not 0, inside elementwise
# kernels with the ops around it (the test fills the const's buffer with
# -1 or another divisor, in turn).
mesh dp

input a : i32[4, 6] shard(dp, _)
input b : i32[6]
input c : i32[4, 1] shard(dp, _)

q = a / b
r = c / a
s = b / c
t = a / 3 + c
u = max(a / -1, c)
output q, r, s, t, u
