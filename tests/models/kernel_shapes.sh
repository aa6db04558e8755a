# kernel_shapes.sh: shapes that leave the generated kernels' tiles and
# chunks partly empty (test_kernel_emulate runs them against the CPU
# backend): an embedding gradient of 2500 ids (three tiles of ids, the
# last partly empty) into 50 rows of 300 (three units of up to 24 rows,
# two columns a thread) and one of 40 ids into 5 rows of 1100 (two chunks
# of 1024 columns), a cross-entropy over 3000 classes
# (a block per row, its gradient's rows a block's too) beside one over 24
# (its gradient's rows a warp's), a transpose whose 32 x 32 tiles overhang
# (the last dim moves: 45 x 70 per index of the first dim) and one that
# keeps the last dim (runs of 45, single words), a softmax over rows of
# 1500 (a block's), and reductions over a middle axis: of 200 elements (a
# block per 32 results, its warps splitting the axis; 37 columns leave the
# second 32 partly empty) and of 4 (a thread per result); sin and cos,
# forward and backward, of the embedded rows; slices and concats of 2 to 5
# pieces (nested), forward and backward (its zeros around the slice). A
# cross-entropy and a softmax over rows of 40000, too long for a block's
# registers, take the max and the sum in one pass (online), then the
# results. Their loops over a row load up to 4 steps ahead, then the steps
# left (guarded); so do those of a bf16 cross-entropy, its gradient and a
# softmax over rows of 56000 (8 elements a load: 6 or 7 steps of a block
# of 1024 threads, 13 or 14 of the cross-entropy's 512, so 1 to 3 left),
# and of a cross-entropy over 5003 classes (an element a load).
# Column reductions of 16-byte vectors a lane (8 bf16 or 4 f32 columns):
# a bf16 sum over 2048 rows of 80 columns (one group of 32 lanes, its
# last 22 lanes holding no column, 32 runs over 4 warps: 8 runs a warp in
# the last block's sum of the parts), an f32 max over 300 rows (4 runs,
# fewer than its 8 warps: warps left with no run), a bf16 mean over the
# middle axis of [3, 512, 40] (3 groups of 8 runs) and an f32 sum over 100
# rows of 1024 (8 groups, not split); over the 3 of [3, 512, 40]'s first
# axis, a thread per 8 results.
mesh a
input ids : i32[2500]
input ids2 : i32[40]
input lab : i32[2500]
input z   : f32[64, 3000]
input lz  : i32[64]
input t   : f32[3, 70, 45]
input y   : f32[8, 1500]
input r   : f32[4, 200, 37]
input zz  : f32[2, 40000]
input lzz : i32[2]
input zb  : bf16[2, 56000]
input lzb : i32[2]
input zo  : f32[2, 5003]
input lzo : i32[2]
input rb  : bf16[2048, 80]
input rf  : f32[300, 64]
input rm  : bf16[3, 512, 40]
input rs  : f32[100, 1024]
param e   : f32[50, 300] = normal(1.0)
param e2  : f32[5, 1100] = normal(1.0)
param w   : f32[300, 24] = normal(0.05)
param wz  : f32[3000] = normal(1.0)
param wzz : f32[40000] = normal(1.0)
param wzb : bf16[56000] = normal(1.0)
h = embedding(e, ids)
h2 = embedding(e2, ids2)
hc = concat([h[:, 250:], h[:, :7], h[:, 40:41]], axis = 1)
l1 = cross_entropy(h @ w, lab) + cross_entropy(z * wz, lz) + cross_entropy(zz * wzz, lzz) + cast(cross_entropy(zb * wzb, lzb), f32) + cross_entropy(zo, lzo)
loss = l1 + 0.1 * mean(sin(h) * cos(h)) + 0.1 * mean(hc * hc) + 0.1 * mean(h2 * h2)
u = transpose(t, [2, 0, 1])
v = transpose(t, [1, 0, 2])
s = softmax(y, axis = -1)
s2 = softmax(zz, axis = -1)
s3 = softmax(zb, axis = -1)
a1 = sum(r * 2.0, axis = 1)
a2 = amax(r, axis = 1)
a3 = mean(r, axis = 0)
b1 = sum(rb * 2.0, axis = 0)
b2 = amax(rf, axis = 0)
b3 = mean(rm, axis = 1)
b4 = sum(rs, axis = 0)
b5 = sum(rm, axis = 0)
c5 = concat([t[:, :3, :], t[:, 10:, :], t[:, 5:6, :] * 2.0, t[:, 69:, :], t], axis = 1)
output loss, u, v, s, s2, s3, a1, a2, a3, b1, b2, b3, b4, b5, c5
train loss with sgd(lr = 0.1)
