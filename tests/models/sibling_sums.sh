# sibling_sums.sh: pairs of sums over the same rows, the first of dy alone
# and the second of a product reading dy (a layernorm's bias and gain
# gradients, sum(dy) and sum(dy * (x - m) * r)), each pair one column
# kernel summing both (passes/fuse.c's join_siblings; test_kernel_emulate runs
# them against the CPU backend), over each of the column kernel's ways:
# f32 rows of 6 (a lane a column) over 256 rows (split over blocks), bf16
# rows of 80 (8 columns a lane, one group of 32 lanes, its last 22 lanes
# holding none) over 2048 rows (split), f32 rows of 1024 (4 columns a lane,
# 8 groups) over 100 rows (not split), and over the 3 rows of [3, 40, 8]'s
# first axis (a thread per vector of results) and of [3, 6] (a thread per
# result). c2, a third sum reading dy2 after the pair, keeps its own
# kernel: only a sum of a value alone joins another's.
mesh a
input dy1 : f32[256, 6]
input x1  : f32[256, 6]
input m1  : f32[256, 1]
input r1  : f32[256, 1]
input dy2 : bf16[2048, 80]
input x2  : bf16[2048, 80]
input m2  : bf16[2048, 1]
input r2  : bf16[2048, 1]
input dy3 : f32[100, 1024]
input x3  : f32[100, 1024]
input dy4 : f32[3, 40, 8]
input x4  : f32[3, 40, 8]
input dy5 : f32[3, 6]
input x5  : f32[3, 6]
b1 = sum(dy1, axis = 0)
g1 = sum(dy1 * ((x1 - m1) * r1), axis = 0)
b2 = sum(dy2, axis = 0)
g2 = sum(dy2 * ((x2 - m2) * r2), axis = 0)
c2 = sum(dy2 * 2.0, axis = 0)
b3 = sum(dy3, axis = 0)
g3 = sum(dy3 * x3, axis = 0)
b4 = sum(dy4, axis = 0)
g4 = sum(dy4 * x4 + x4, axis = 0)
b5 = sum(dy5, axis = 0)
g5 = sum(dy5 * x5, axis = 0)
output b1, g1, b2, g2, c2, b3, g3, b4, g4, b5, g5
