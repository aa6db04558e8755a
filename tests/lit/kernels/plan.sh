# Kernels in the plan: each fused group's kernel, named at its
# anchor in the schedule with its launch geometry and the buffers it reads
# and writes; the module of their code (one NVRTC program) with cubins for every --arch and PTX for the newest.
# (--arch is given: the harness sets $SHARDC_ARCH=none for the other tests.)
# The CPU backend runs the plan's instructions and ignores the kernels.
# RUN: %shardc %s --mesh 2 --arch sm_80,sm_90 --emit schedule | FileCheck %s
# RUN: %shardc %s --mesh 2 --arch sm_80,sm_90 -o %t.plan
# RUN: %shardrun %t.plan --seed 1 | FileCheck %s --check-prefix=OUT
# RUN: %shardc %s --mesh 2 --arch sm_90 --emit schedule | FileCheck %s --check-prefix=SM90
# --arch none: a CPU-only plan, the same outputs
# RUN: %shardc %s --mesh 2 --arch none --emit schedule | FileCheck %s --check-prefix=NONE
# RUN: %shardc %s --mesh 2 --arch none -o %t.cpu.plan
# RUN: %shardrun %t.cpu.plan --seed 1 | FileCheck %s --check-prefix=OUT
# RUN: SHARDC_ARCH=sm_80 %shardc %s --mesh 2 --emit schedule | FileCheck %s --check-prefix=ENV
# RUN: SHARDC_ARCH=sm80 %expect 2 %shardc %s --mesh 2 --emit schedule 2>&1 | FileCheck %s --check-prefix=BADENV
mesh dp
input x : f32[8, 64] shard(dp, _)
param b : f32[64] = normal(0.1)
param w : f32[64, 64] = normal(0.1)
h = gelu(x + b)
y = exp(h @ w)
s = sum(h, axis = 1)
output y, s
# gelu's result takes the buffer of x + b, which its kernel keeps in
# registers (the CPU computes it in place): 7 buffers, where the CPU-only
# plan has 8.
# CHECK: stage 0 (every rank): 8 instructions, 7 buffers in an arena of {{[0-9]+}} bytes, 3 kernels of 1 module (cubins for sm_80, sm_90; PTX for compute_90)
# CHECK-NEXT: %[[X:[0-9]+]] = input {name = "x"} : f32[4, 64]
# CHECK-NEXT: %[[B:[0-9]+]] = param {name = "b"} : f32[64]
# CHECK-NEXT: %[[W:[0-9]+]] = param {name = "w"} : f32[64, 64]
# CHECK-NEXT: %[[A:[0-9]+]] = add %[[X]], %[[B]] : f32[4, 64]{{$}}
# CHECK-NEXT: %[[A]] = gelu %[[A]] : f32[4, 64]    // kernel k0_add_gelu (elementwise, grid 1, block 64, 0 shared bytes): runs %[[A]], %[[A]]; reads %[[X]], %[[B]]; writes %[[A]]{{$}}
# CHECK-NEXT: %[[M:[0-9]+]] = matmul %[[A]], %[[W]] : f32[4, 64]{{$}}
# CHECK-NEXT: %[[Y:[0-9]+]] = exp %[[M]] : f32[4, 64]    // kernel k1_exp (elementwise, grid 1, block 64, 0 shared bytes): runs %[[Y]]; reads %[[M]]; writes %[[Y]]
# CHECK-NEXT: %{{[0-9]+}} = sum %[[A]] {axis = 1, keepdims = false} : f32[4]    // kernel k2_sum (row, grid 1, block 256, 0 shared bytes): runs
# OUT-LABEL: made from seed 1: x, b, w
# OUT: outputs:
# OUT-NEXT: y f32[8, 64]: mean 1.14809 std 0.692114 min 0.0826296 max 5.1124
# OUT-NEXT: s f32[8]: mean 19.03 std 4.75412 min 11.0078 max 25.7878
# SM90: 3 kernels of 1 module (cubins for sm_90; PTX for compute_90)
# NONE: stage 0 (every rank): 8 instructions, 8 buffers in an arena of {{[0-9]+}} bytes{{$}}
# NONE-NOT: kernel
# ENV: 3 kernels of 1 module (cubins for sm_80; PTX for compute_80)
# BADENV: shardc: error: $SHARDC_ARCH: --arch 'sm80': expected sm_NN, as in --arch sm_80,sm_90
