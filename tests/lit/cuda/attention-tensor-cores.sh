# A 16-bit attention forward whose head widths are multiples of 16 (up to
# 128) runs on tensor cores: the WMMA kernel of codegen/cuda_ops.c
# (mma.h; 4 warps of 16 query rows; q k^T and p v as 16 x 16 x 16 tiles
# with f32 accumulators; p as a hi and a lo 16-bit part). NVRTC compiles
# it for sm_80 and sm_90 (-o). bf16's WMMA needs sm_80: with sm_75 among
# the targets the bf16 forward keeps the CUDA-core kernel and the f16 one
# (sm_70 and newer) stays on tensor cores. A head width not a multiple of
# 16 keeps the CUDA-core kernel. The backward's kernels (attn_stats,
# attn_dq, attn_dk, attn_dv and their pair) of such an attention run on
# tensor cores too (tests/models/attn_bf16.sh, trained). test_kernel_emulate
# runs these kernels against the CPU backend.
# RUN: %shardc %s --mesh 1 --arch sm_80,sm_90 --emit cuda | FileCheck %s
# RUN: %shardc %s --mesh 1 --arch sm_80,sm_90 -o %t.plan
# RUN: %shardc %s --mesh 1 --arch sm_75,sm_90 --emit cuda | FileCheck %s --check-prefix=OLD
# RUN: %shardc %S/../../models/attn_bf16.sh --mesh 1 --arch sm_80 --emit cuda | FileCheck %s --check-prefix=BACK
mesh dp
input q : bf16[2, 3, 40, 32]
input k : bf16[2, 3, 72, 32]
input v : bf16[2, 3, 72, 48]
input qh : f16[2, 3, 40, 32]
input qw : bf16[2, 3, 40, 24]
a = attention(q, k, v, causal = true)
b = attention(qh, qh, qh)
c = attention(qw, qw, qw)
output a, b, c
# CHECK: // k{{[0-9]+}}_attention: row kernel of attention over bf16[2, 3, 40, 48]
# CHECK: // launch: grid (6, 1, 1), block (128, 1, 1), {{[0-9]+}} bytes of dynamic shared memory
# CHECK-NEXT: // a block per 64 query rows of a head, 16 a warp, on tensor cores (WMMA)
# CHECK: #include <mma.h>
# CHECK: typedef wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> bt_t;
# CHECK: extern __shared__ __align__(128) float sm[];
# CHECK: wmma::mma_sync(sf, qf[c], b, sf);
# CHECK: wmma::mma_sync(of[f], wh, b, of[f]);
# CHECK-NEXT: wmma::mma_sync(of[f], wl, b, of[f]);
# CHECK: // k{{[0-9]+}}_attention: row kernel of attention over f16[2, 3, 40, 32]
# CHECK: on tensor cores (WMMA)
# CHECK: // k{{[0-9]+}}_attention: row kernel of attention over bf16[2, 3, 40, 24]
# CHECK-NOT: wmma
# CHECK: // a block per 128 / group query rows of a head, keys in shared tiles, online softmax
# OLD: // k{{[0-9]+}}_attention: row kernel of attention over bf16[2, 3, 40, 48]
# OLD-NOT: wmma
# OLD: // k{{[0-9]+}}_attention: row kernel of attention over f16[2, 3, 40, 32]
# OLD: on tensor cores (WMMA)
# OLD: // k{{[0-9]+}}_attention: row kernel of attention over bf16[2, 3, 40, 24]
# OLD-NOT: wmma
# BACK: _attn_dv_attn_dk: row kernel of attn_dk and attn_dv over bf16[2, 2, 72, 32]
# BACK: // a block per 64 keys of a head, 16 a warp, on tensor cores (WMMA)
# BACK: _attn_stats: row kernel of attn_stats over f32[2, 2, 40, 2]
# BACK: // a block per 64 query rows of a head, 16 a warp, on tensor cores (WMMA)
# BACK: _attn_dq: row kernel of attn_dq over bf16[2, 2, 40, 32]
# BACK: // a block per 64 query rows of a head, 16 a warp, on tensor cores (WMMA)
