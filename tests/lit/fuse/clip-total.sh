# clip's norm as one kernel (passes/fuse.h, TOTAL groups; the kernel is
# codegen's cg_emit_total). Each param's sum of squares is a chain of sums,
# [64, 320] over its rows then its columns, which were two kernels (the
# second on one block), and the running total's adds were in their
# epilogues; on one rank the four chains (through the partitioner's
# constrains, renames of a value partial over an axis of one rank), the
# adds, the norm's sqrt and the factor are one kernel, which stores the
# factor alone and writes the constants it reads as literals. Its four parts are one code (a loop over each part's
# chunks of 16384 elements, w1's and w2's 20480 two chunks each); the last
# block to finish sums each part's chunks in order and runs the scalars.
# On 2x2 the sums partial over tp are one kernel, storing their sum, which
# one all-reduce makes whole (passes/join_sums.c).
# RUN: %shardc %S/../../models/clip_total.sh --mesh 1x1 --arch sm_90 --emit fused-ir | FileCheck %s
# CHECK:     // kernel [[K:k[0-9]+_mul_sum_add_sqrt_x4]]: sums to scalars of 4 tensors [64, 320], [320], [320, 64], [64], then scalars; reads %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}; stores %[[F:[0-9]+]]
# CHECK:     %{{[0-9]+}} = const {value = 1e-06} : f32[] auto() phase optimizer  // [[K]]{{$}}
# CHECK:     %[[F]] = min %{{[0-9]+}}, %{{[0-9]+}} : f32[] auto() phase optimizer  // [[K]], stored
# CHECK-NOT: sum {{.*}} phase optimizer
# RUN: %shardc %S/../../models/clip_total.sh --mesh 1x1 --arch sm_90 --emit cuda | FileCheck %s --check-prefix=CUDA
# CUDA:      k{{[0-9]+}}_mul_sum_add_sqrt_x4: multi-tensor sums to scalars over 4 tensors
# CUDA:      for (i64 c = blockIdx.x; c < 6; c += gridDim.x) { // chunks of 16384 elements
# CUDA:      { // parts 0 and 3 more like it: one code
# CUDA:      } else if (c < 5) { // part 2: %{{[0-9]+}}
# CUDA-NEXT:     first = 3;
# CUDA-NEXT:     n = 20480;
# CUDA:      acc += xin;
# CUDA:      last = atomicAdd(&sh_cdone[0], 1u) + 1 == gridDim.x;
# CUDA:      const i64 first[4] = {0, 2, 3, 5}; // each part's first chunk
# CUDA-NEXT: const i64 end[4] = {2, 3, 5, 6}; // and its last chunk's next
# CUDA:      sqrtf(
# CUDA-NEXT: const float v_t{{[0-9]+}} = v_t{{[0-9]+}} + 1e-06f; // add
# CUDA:      p_t{{[0-9]+}}[0] =
# NVRTC compiles it (a plan with kernels for sm_90, on both meshes).
# RUN: %shardc %S/../../models/clip_total.sh --mesh 1x1 --arch sm_90 -o %t.plan
# RUN: %shardc %S/../../models/clip_total.sh --mesh 2x2 --arch sm_90 --dtype bf16 -o %t.plan
# RUN: %shardc %S/../../models/clip_total.sh --mesh 2x2 --arch sm_90 --emit fused-ir | FileCheck %s --check-prefix=TP
# TP:      // kernel k{{[0-9]+}}_mul_sum_add_x3: sums to scalars of 3 tensors [64, 160], [160], [160, 64], then scalars; reads %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}; stores %[[P:[0-9]+]]
# TP:      %[[P]] = add %{{[0-9]+}}, %{{[0-9]+}} : f32[] auto() partial(tp) phase optimizer  // k{{[0-9]+}}_mul_sum_add_x3, stored
# TP-NEXT: all_reduce %[[P]] {axes = [tp]} : f32[] auto() phase optimizer
