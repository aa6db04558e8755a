# A thread's vector of elements (cg_vec_of): 16 bytes of a 16-bit value.
# A bf16 layernorm over rows of 256 (a warp's) loads 8 elements at once,
# keeps 8 per step of the row in registers, and says the buffers must be
# 16-byte aligned; over rows of 12 (divisible by 4, not 8) it loads 4 (8
# bytes). A kernel with an f32 value beside the bf16 ones (the cast of a
# bf16 sum to f32) loads 4 of each, 16 bytes of the f32 value and 8 of the
# bf16 one, so that each load or store of a warp is contiguous. Values
# that do not run along the last dim do not count: cross_entropy's i32
# labels (one a row) leave its bf16 logits 8 elements a load.
# RUN: %shardc %s --mesh 2 --emit cuda | FileCheck %s
mesh dp
input x : bf16[8, 256] shard(dp, _)
input y : bf16[8, 12] shard(dp, _)
input lo : bf16[8, 64] shard(dp, _)
input t : i32[8] shard(dp)
param g : bf16[256] = ones
param b : bf16[256] = zeros
param g2 : bf16[12] = ones
param b2 : bf16[12] = zeros
h = layernorm(x, g, b)
k = layernorm(y, g2, b2)
c = cast(x + x, f32)
loss = cross_entropy(lo, t)
output h, k, c, loss
# CHECK: // k0_layernorm: row kernel over bf16[4, 256] (4 rows of 256)
# CHECK: // a warp per row, 8 rows a block, grid-stride over rows; 8 elements per load; assumes 16-byte aligned buffers and the last dim divisible by 8
# CHECK: float xs[8]; // this thread's elements of the row
# CHECK: const vec<__nv_bfloat16, 8> l_x = *reinterpret_cast<const vec<__nv_bfloat16, 8> *>(p_x + e);
# CHECK: xs[j * 8 + q] = xin; acc += xin;
# CHECK: // k1_layernorm: row kernel over bf16[4, 12] (4 rows of 12)
# CHECK: 4 elements per load; assumes 8-byte aligned buffers and the last dim divisible by 4
# CHECK: const vec<__nv_bfloat16, 4> l_y
# CHECK: // k2_add_cast: elementwise kernel over f32[4, 256]
# CHECK: // one thread per 4 elements, grid-stride; assumes 16-byte aligned buffers and the last dim divisible by 4
# CHECK: const vec<__nv_bfloat16, 4> l_x
# CHECK: vec<float, 4> s_c;
# CHECK: *reinterpret_cast<vec<float, 4> *>(p_c + e) = s_c;
# CHECK: // k3_cross_entropy_mul: row kernel over bf16[4, 64] (4 rows of 64)
# CHECK: // one block per row, grid-stride over rows; 8 elements per load;
# CHECK: const int lab = p_t[row];
# CHECK: const vec<__nv_bfloat16, 8> l_lo = *reinterpret_cast<const vec<__nv_bfloat16, 8> *>(p_lo + e);
