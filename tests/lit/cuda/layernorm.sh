# layernorm over the last dim, fused with the residual add before it (both
# stored: the sum is output too): the mean, then the population variance
# around it, with eps added to the variance inside the square root, then
# (x - mean) * rstd * g + b, as the CPU backend computes it. rmsnorm has no
# mean: x * rstd * g. Rows of 256 are a warp's (reductions by shuffles).
# RUN: %shardc %s --mesh 2 --emit cuda | FileCheck %s
mesh dp
input x : f32[8, 256] shard(dp, _)
input r : f32[8, 256] shard(dp, _)
param g : f32[256] = ones
param b : f32[256] = zeros
s = x + r
h = layernorm(s, g, b)
n = rmsnorm(x, g, eps = 0.001)
output s, h, n
# CHECK: // k0_add_layernorm: row kernel over f32[4, 256] (4 rows of 256)
# CHECK-NEXT: //   %s = add %x, %r  (stored)
# CHECK-NEXT: //   %h = layernorm %s, %g, %b  (stored)
# CHECK-NEXT: // launch: grid (1, 1, 1), block (256, 1, 1), 0 bytes of dynamic shared memory
# CHECK-NEXT: // a warp per row, 8 rows a block, grid-stride over rows; 4 elements per load
# CHECK: float acc = 0.0f;
# CHECK: s_s.v[q] = v_s;
# CHECK-NEXT: const float xin = v_s;
# CHECK-NEXT: xs[j * 4 + q] = xin; acc += xin;
# CHECK: *reinterpret_cast<vec<float, 4> *>(p_s + e) = s_s;
# CHECK: const float mean = sh_warp_sum(acc) / 256.0f;
# CHECK: acc2 += (xin - mean) * (xin - mean);
# CHECK: const float rstd = 1.0f / sqrtf(sh_warp_sum(acc2) / 256.0f + 1e-05f);
# CHECK: l_g = *reinterpret_cast<const vec<float, 4> *>(p_g + e % 256);
# CHECK-NEXT: l_b = *reinterpret_cast<const vec<float, 4> *>(p_b + e % 256);
# CHECK: const float v_h = (xin - mean) * rstd * v_g + v_b; // layernorm
# CHECK: // k1_rmsnorm: row kernel over f32[4, 256]
# CHECK: xs[j * 4 + q] = xin; acc += xin * xin;
# CHECK: const float rstd = 1.0f / sqrtf(sh_warp_sum(acc) / 256.0f + 0.001f);
# CHECK: const float v_n = xin * rstd * v_g; // rmsnorm
