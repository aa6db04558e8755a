# Rotary embeddings as one kernel each way (passes/fuse.c's find_views):
# llama.sh rotates each head's halves with slices, a negation and a
# concat, x * cs + concat([-x[..., E/2:], x[..., :E/2]]) * sn. The narrows,
# the neg and the concat had been a kernel each (four for q, four for k,
# each layer), their values stored; now they join the muls and the add
# around them, one elementwise kernel reading q (k), cs and sn, storing
# the result alone: a thread reads q at its element and at the one half a
# head away. The transpose that makes q ([B, S, H, E] to [B, H, S, E]) is
# in that kernel too: q is read from the matmul's result where each
# element comes from. The backward, each narrow's gradient padded with a zero
# expand and the pads added, is one kernel too (six and eight op kernels
# before); it stores dq (dk) transposed back to [B, S, H, E] for the
# matmuls after it, where a transpose kernel had read it again. The cos
# and sin tables, each a concat of two halves, are one kernel each.
# RUN: %shardc %S/../../../examples/llama.sh --mesh 1x1 --arch sm_90 --emit fused-ir | FileCheck %s
# CHECK:     // kernel [[K:k[0-9]+_cos_concat]]: elementwise over [128, 32]; reads %ang; stores %cs
# CHECK:     %[[M:[0-9]+]] = reshape %{{[0-9]+}} {shape = [8, 128, 8, 32]}
# CHECK-NEXT: // kernel [[Q:k[0-9]+_transpose_mul_narrow_neg]]: elementwise over [8, 8, 128, 32]; reads %[[M]], %cs, %sn; stores %layers.0.attn.q.1{{$}}
# CHECK-NEXT: %layers.0.attn.q = transpose %[[M]] {perm = [0, 2, 1, 3]} : f32[8, 8, 128, 32] auto(dp, tp, _, _)  // [[Q]]{{$}}
# CHECK:     // kernel k{{[0-9]+}}_transpose_mul_narrow_neg: elementwise over [8, 2, 128, 32]; reads %{{[0-9]+}}, %cs, %sn; stores %layers.0.attn.k.1{{$}}
# CHECK:     = narrow %layers.0.attn.q {dim = 3, offset = 16, bound = 32} : f32[8, 8, 128, 16] auto(dp, tp, _, _)  // [[Q]]{{$}}
# CHECK:     = concat %{{[0-9]+}}, %{{[0-9]+}} {dim = 3} : f32[8, 8, 128, 32] auto(dp, tp, _, _)  // [[Q]]{{$}}
# CHECK:     %layers.0.attn.q.1 = add %{{[0-9]+}}, %{{[0-9]+}} : f32[8, 8, 128, 32] auto(dp, tp, _, _)  // [[Q]], stored
# CHECK:     // kernel [[B:k[0-9]+_mul_narrow_expand_concat]]: elementwise over [8, 2, 128, 32]; reads %{{[0-9]+}}, %sn, %cs; stores %{{[0-9]+}}{{$}}
# CHECK:     = expand %{{[0-9]+}} {shape = [8, 2, 128, 16]} : f32[8, 2, 128, 16] auto(dp, tp, _, _) phase backward  // [[B]]{{$}}
# CHECK:     // kernel [[D:k[0-9]+_mul_narrow_expand_concat]]: elementwise over [8, 8, 128, 32]; reads %{{[0-9]+}}, %sn, %cs; stores %[[DQ:[0-9]+]]{{$}}
# CHECK:     %[[DQ]] = transpose %{{[0-9]+}} {perm = [0, 2, 1, 3]} : f32[8, 128, 8, 32] auto(dp, _, tp, _) phase backward  // [[D]], stored
# RUN: %shardc %S/../../../examples/llama.sh --mesh 1x1 --arch sm_90 --emit fused-ir | FileCheck %s --check-prefix=NONE
# NONE-NOT:  // kernel k{{[0-9]+}}_neg:
# RUN: %shardc %S/../../../examples/llama.sh --mesh 1x1 --arch sm_90 --emit schedule | FileCheck %s --check-prefix=SCHED
# SCHED-NOT: // kernel k{{[0-9]+}}_narrow (
# SCHED-NOT: // kernel k{{[0-9]+}}_concat (
# The kernel: the concat's element from the half holding it, q read there,
# once for a vector of 4 lanes (codegen/cuda_tile.c's view_vectors): q's
# row and the rotated half each one aligned 16-byte load, the concat's
# branch taken for the vector, the lanes then in the tile's loop.
# RUN: %shardc %S/../../../examples/llama.sh --mesh 1x1 --arch sm_90 --emit cuda | FileCheck %s --check-prefix=CUDA
# CUDA:      k{{[0-9]+}}_transpose_mul_narrow_neg(
# CUDA:      const vec<float, 4> [[T:u[0-9]+]] = *reinterpret_cast<const vec<float, 4> *>(p_t{{[0-9]+}} + (((e) / 32768) * 32768 + (((e) / 4096) % 8) * 32 + (((e) / 32) % 128) * 256 + (e) % 32));
# CUDA-NEXT: vec<float, 4> [[C:u[0-9]+]]; // concat
# CUDA-NEXT: const i64 [[R:u[0-9]+]] = (e) % 32; // its element of the dim
# CUDA-NEXT: if ([[R]] < 16) {
# CUDA-NEXT:     const i64 [[I:u[0-9]+]] = ((e) - (e) / 32 * 16);
# CUDA-NEXT:     const i64 [[J:u[0-9]+]] = ([[I]] + [[I]] / 16 * 16 + 16);
# CUDA-NEXT:     const vec<float, 4> [[A:u[0-9]+]] = *reinterpret_cast<const vec<float, 4> *>(p_t{{[0-9]+}} + (([[J]] / 32768) * 32768 + {{.*}}));
# CUDA-NEXT:     vec<float, 4> [[N:u[0-9]+]]; // neg
# CUDA-NEXT:     #pragma unroll
# CUDA-NEXT:     for (int q = 0; q < 4; q++)
# CUDA-NEXT:         [[N]].v[q] = -[[A]].v[q];
# CUDA:          [[C]].v[q] = [[N]].v[q];
# CUDA-NEXT: } else {
# CUDA:      for (int q = 0; q < 4; q++) {
# CUDA:      const float v_layers_0_attn_q = [[T]].v[q]; // transpose
# CUDA-NEXT: const float v_t{{[0-9]+}} = v_layers_0_attn_q * v_cs; // mul
# CUDA-NEXT: const float v_t{{[0-9]+}} = [[C]].v[q]; // concat
# NVRTC compiles them, f32 and bf16, split over tp.
# RUN: %shardc %S/../../../examples/llama.sh --mesh 2x2 --arch sm_90 -o %t.plan
# RUN: %shardc %S/../../../examples/llama.sh --mesh 2x2 --arch sm_90 --dtype bf16 -o %t.plan
