# A value cast to bf16 and back inside one kernel whose buffers are all
# f16: the kernel rounds through bf16 (sh_bf16), so it includes
# cuda_bf16.h although no parameter is bf16. NVRTC compiles it; before,
# the include came only from the parameters' dtypes, and NVRTC stopped at
# an undefined __float2bfloat16_rn (found by the differential soak with
# kernels, DIFF_ARCH=sm_90). The CPU backend runs the plan as the CPU-only
# one: y = bf16(x) * x, rounded to f16.
# RUN: %shardc %s --mesh 1 --arch sm_90 --emit cuda | FileCheck %s
# RUN: %shardc %s --mesh 1 --arch sm_90 -o %t.plan
# RUN: %shardc %s --mesh 1 --arch none -o %t.cpu.plan
# RUN: %shardrun %t.plan --seed 3 --outputs %t.out.st > /dev/null
# RUN: %shardrun %t.cpu.plan --seed 3 --outputs %t.cpu.st > /dev/null
# RUN: cmp %t.out.st %t.cpu.st
mesh dp
input x : f16[8, 16] shard(_, _)
y = cast(cast(x, bf16), f16) * x
output y
# CHECK: // k0_cast_mul: elementwise kernel over f16[8, 16]
# CHECK: #include <cuda_fp16.h>
# CHECK-NEXT: #include <cuda_bf16.h>
# CHECK: sh_bf16(
