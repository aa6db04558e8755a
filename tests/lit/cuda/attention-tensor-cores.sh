# A 16-bit attention forward whose head widths are multiples of 16 (up to
# 128) runs on tensor cores. When every target is sm_80 or newer, through
# PTX (codegen/cuda_ops.c, "attention on tensor cores through PTX"):
# mma.sync m16n8k16 with the scores in registers, ldmatrix loading k's
# tile and v's transposed, p rounded to the dtype as one A fragment (one
# product a tile of v, as FlashAttention's and cuDNN's). NVRTC compiles
# it for sm_80 and sm_90 (-o). With sm_75 among the targets, the WMMA
# kernel (mma.h; 16 x 16 x 16 tiles, the scores through shared memory)
# serves f16 (sm_70 and newer), and bf16, whose WMMA needs sm_80 too,
# keeps the CUDA-core kernel. A head width not a multiple of 16 keeps the
# CUDA-core kernel. An f32 attention of such heads takes the mma.sync
# kernel with sm_80 and newer targets alone, each f32 as three bf16 parts
# (k's tiles in three parts side by side) and each product
# as six, the smallest first; with sm_75, the CUDA-core kernel. The backward's kernels (attn_stats, attn_dq, attn_dk,
# attn_dv and their pair) of such an attention take the same paths
# (tests/models/attn_bf16.sh, trained). test_kernel_emulate runs these
# kernels against the CPU backend, for sm_80 and for sm_75.
# RUN: %shardc %s --mesh 1 --arch sm_80,sm_90 --emit cuda | FileCheck %s
# RUN: %shardc %s --mesh 1 --arch sm_80,sm_90 -o %t.plan
# RUN: %shardc %s --mesh 1 --arch sm_75,sm_90 --emit cuda | FileCheck %s --check-prefix=OLD
# RUN: %shardc %s --mesh 1 --arch sm_75,sm_90 -o %t75.plan
# RUN: %shardc %S/../../models/attn_bf16.sh --mesh 1 --arch sm_80 --emit cuda | FileCheck %s --check-prefix=BACK
# RUN: %shardc %S/../../models/attn_bf16.sh --mesh 1 --arch sm_75 --emit cuda | FileCheck %s --check-prefix=BACK75
mesh dp
input q : bf16[2, 3, 40, 32]
input k : bf16[2, 3, 72, 32]
input v : bf16[2, 3, 72, 48]
input qh : f16[2, 3, 40, 32]
input qw : bf16[2, 3, 40, 24]
input qf : f32[2, 3, 40, 32]
input kf : f32[2, 3, 72, 32]
a = attention(q, k, v, causal = true)
b = attention(qh, qh, qh)
c = attention(qw, qw, qw)
e = attention(qf, kf, kf, causal = true)
output a, b, c, e
# CHECK: // k{{[0-9]+}}_attention: row kernel of attention over bf16[2, 3, 40, 48]
# CHECK: // launch: grid (6, 1, 1), block (128, 1, 1), {{[0-9]+}} bytes of dynamic shared memory
# CHECK-NEXT: // a block per 64 query rows of a head, 16 a warp, on tensor cores (mma.sync)
# CHECK-NOT: mma.h
# CHECK: ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16
# CHECK: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
# CHECK: extern __shared__ __align__(128) float sm[];
# CHECK: sh_ldsm4(qa[c], qst + (lane & 15) * 40 + c * 16 + (lane >> 4) * 8);
# CHECK: sh_ldsm2(b0, b1, ks + (n * 8 + (lane & 7)) * 40 + c * 16 + (lane >> 3 & 1) * 8);
# CHECK-NEXT: sh_mma_bf16(sc[n], qa[c], b0, b1);
# CHECK: sh_ldsm2t(b0, b1, vs + (kk * 16 + (lane & 15)) * 56 + nn * 8);
# CHECK-NEXT: sh_mma_bf16(oacc[nn], ph, b0, b1);
# CHECK-NEXT: }
# CHECK: // k{{[0-9]+}}_attention: row kernel of attention over f16[2, 3, 40, 32]
# CHECK: on tensor cores (mma.sync)
# CHECK: sh_mma_f16(sc[n], qa[c], b0, b1);
# CHECK: // k{{[0-9]+}}_attention: row kernel of attention over bf16[2, 3, 40, 24]
# CHECK-NOT: sh_mma
# CHECK: // a block per 128 / group query rows of a head, keys in shared tiles, online softmax
# CHECK: // k{{[0-9]+}}_attention: row kernel of attention over f32[2, 3, 40, 32]
# CHECK-NEXT: //   %e = attention %qf, %kf, %kf
# CHECK: on tensor cores (mma.sync), each f32 as three bf16 parts and each product as six
# CHECK: #include <cuda_bf16.h>
# CHECK: __device__ __forceinline__ void sh_split3(float4 a, float4 b, uint4 &h, uint4 &m, uint4 &l)
# CHECK: __nv_bfloat16 *const ks_l = (__nv_bfloat16 *)(smb + {{[0-9]+}}); // [64 keys][40]: k's tile, part 2
# CHECK: sh_split3(f0, f1, part[0], part[1], part[2]);
# CHECK: sh_ldsm4(qa_l[c], qst
# CHECK: sh_mma_bf16(sc[n], qa_l[c], b0, b1);
# CHECK: sh_mma_bf16(sc[n], qa[c], b0, b1);
# CHECK: sh_split3_2(w2[0], w2[1], pw[x], pw_m[x], pw_l[x]);
# CHECK: sh_mma_bf16(oacc[nn], pw_l, b[0][0], b[0][1]);
# CHECK-NEXT: sh_mma_bf16(oacc[nn], pw_m, b[1][0], b[1][1]);
# CHECK-NEXT: sh_mma_bf16(oacc[nn], pw, b[2][0], b[2][1]);
# CHECK-NEXT: sh_mma_bf16(oacc[nn], pw_m, b[0][0], b[0][1]);
# CHECK-NEXT: sh_mma_bf16(oacc[nn], pw, b[1][0], b[1][1]);
# CHECK-NEXT: sh_mma_bf16(oacc[nn], pw, b[0][0], b[0][1]);
# CHECK: *(float2 *)(p3 + {{.*}} + c) = make_float2(oacc[nn][x * 2] * f, oacc[nn][x * 2 + 1] * f);
# OLD: // k{{[0-9]+}}_attention: row kernel of attention over bf16[2, 3, 40, 48]
# OLD-NOT: wmma
# OLD: // k{{[0-9]+}}_attention: row kernel of attention over f16[2, 3, 40, 32]
# OLD: on tensor cores (WMMA)
# OLD: #include <mma.h>
# OLD: typedef wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> bt_t;
# OLD: wmma::mma_sync(sf, qf[c], b, sf);
# OLD: wmma::mma_sync(of[f], wh, b, of[f]);
# OLD-NEXT: wmma::mma_sync(of[f], wl, b, of[f]);
# OLD: // k{{[0-9]+}}_attention: row kernel of attention over bf16[2, 3, 40, 24]
# OLD-NOT: wmma
# OLD: // k{{[0-9]+}}_attention: row kernel of attention over f32[2, 3, 40, 32]
# OLD-NOT: sh_split3
# OLD: // a block per 128 / group query rows of a head, keys in shared tiles, online softmax
# BACK: _attn_dv_attn_dk: row kernel of attn_dk and attn_dv over bf16[2, 2, 72, 32]
# BACK: // a block per 64 keys of a head, 16 a warp, on tensor cores (mma.sync)
# BACK: sh_mma_bf16(dva[nn], ph, b0, b1);
# BACK-NEXT: }
# BACK: sh_mma_bf16(dka[nn], dh, b0, b1);
# BACK-NEXT: }
# BACK: _attn_stats: row kernel of attn_stats over f32[2, 2, 40, 2]
# BACK: // a block per 64 query rows of a head, 16 a warp, on tensor cores (mma.sync)
# BACK: sh_mma_bf16(dp[n], ya[c], b0, b1);
# BACK: _attn_dq: row kernel of attn_dq over bf16[2, 2, 40, 32]
# BACK: // a block per 64 query rows of a head, 16 a warp, on tensor cores (mma.sync)
# BACK: sh_mma_bf16(dqa[nn], dh, b0, b1);
# BACK-NEXT: }
# BACK75: _attn_dv: row kernel of attn_dv over f16[2, 2, 72, 32]
# BACK75: on tensor cores (WMMA)
# BACK75: _attn_dq: row kernel of attn_dq over f16[2, 2, 40, 32]
# BACK75: on tensor cores (WMMA)
# BACK75: _attn_dv: row kernel of attn_dv over bf16[2, 2, 40, 32]
# BACK75-NOT: tensor cores
# BACK75: _attn_dk: row kernel of attn_dk over bf16[2, 2, 40, 32]
