# Matmul kernels in the plan (format 4): a matmul with its bias add and
# gelu, and one with a residual add, each a cuBLASLt call named at its
# anchor with its epilogue, standing for the instructions it folds, reading
# A, B, the bias or the residual and writing the last result. The CPU
# backend runs the instructions one by one and ignores the kernels: the
# outputs are the bytes of a CPU-only plan's.
# RUN: %shardc %s --mesh 2 --arch sm_80 --emit schedule | FileCheck %s
# RUN: %shardc %s --mesh 2 --arch sm_80 -o %t.plan
# RUN: %shardrun %t.plan --seed 1 --outputs %t.k.safetensors > /dev/null
# RUN: %shardc %s --mesh 2 --arch none -o %t.cpu.plan
# RUN: %shardrun %t.cpu.plan --seed 1 --outputs %t.cpu.safetensors > /dev/null
# RUN: cmp %t.k.safetensors %t.cpu.safetensors
mesh dp
input x : f32[8, 64] shard(dp, _)
param b : f32[64] = normal(0.1)
param w1 : f32[64, 64] = normal(0.1)
param w2 : f32[64, 64] = normal(0.1)
h = gelu(x @ w1 + b)
y = x + h @ w2
output y
# CHECK: stage 0 (every rank): 9 instructions, {{[0-9]+}} buffers in an arena of {{[0-9]+}} bytes, 2 matmuls through cuBLASLt with epilogues
# CHECK-NEXT: %[[X:[0-9]+]] = input {name = "x"} : f32[4, 64]
# CHECK-NEXT: %[[B:[0-9]+]] = param {name = "b"} : f32[64]
# CHECK-NEXT: %[[W1:[0-9]+]] = param {name = "w1"} : f32[64, 64]
# CHECK-NEXT: %[[W2:[0-9]+]] = param {name = "w2"} : f32[64, 64]
# CHECK-NEXT: %[[M:[0-9]+]] = matmul %[[X]], %[[W1]] : f32[4, 64]{{$}}
# CHECK-NEXT: %[[A:[0-9]+]] = add %[[M]], %[[B]] : f32[4, 64]{{$}}
# CHECK-NEXT: %[[H:[0-9]+]] = gelu %[[A]] : f32[4, 64]    // kernel k0_matmul_add_gelu (cuBLASLt, epilogue bias, gelu): runs %[[M]], %[[A]], %[[H]]; reads %[[X]], %[[W1]], %[[B]]; writes %[[H]]{{$}}
# CHECK-NEXT: %[[M2:[0-9]+]] = matmul %[[H]], %[[W2]] : f32[4, 64]{{$}}
# CHECK-NEXT: %[[Y:[0-9]+]] = add %[[X]], %[[M2]] : f32[4, 64]    // kernel k1_matmul_add (cuBLASLt, epilogue residual): runs %[[M2]], %[[Y]]; reads %[[H]], %[[W2]], %[[X]]; writes %[[Y]]{{$}}
