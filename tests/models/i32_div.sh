# i32_div.sh: division of i32 (index arithmetic), split over dp
# (test_kernel_emulate): each a kernel of its own, broadcasting as NumPy
# does, against the CPU backend's bits (C's truncation toward zero,
# INT32_MIN / -1 giving INT32_MIN; the test fills the divisors without 0).
mesh dp

input a : i32[4, 6] shard(dp, _)
input b : i32[6]
input c : i32[4, 1] shard(dp, _)

q = a / b
r = c / a
s = b / c
output q, r, s
