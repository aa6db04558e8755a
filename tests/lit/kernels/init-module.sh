# A plan with kernels carries the init module (format 12): sh_init, which
# the CUDA backend runs to make what comes from the seed on the device;
# the schedule names it, the plan holds its code for each architecture,
# a CPU-only plan has none, and the CPU backend makes the same tensors
# from either plan (rt_init_fill: init_gen.h, the module's source) as on
# one rank. Whether sh_init itself gives these bits is test_kernel_emulate's
# check here, tests/gpu/run.sh's on a GPU.
# RUN: %shardc %S/../../models/init_bits.sh --mesh 2x2 --arch sm_80,sm_90 -o %t.plan
# RUN: %shardc %S/../../models/init_bits.sh --mesh 2x2 --arch sm_80,sm_90 --emit schedule | FileCheck %s
# RUN: %shardc %S/../../models/init_bits.sh --mesh 2x2 --emit schedule | FileCheck %s --check-prefix=CPU
# RUN: %shardc %S/../../models/init_bits.sh --mesh 2x2 -o %t.cpu.plan
# RUN: %shardc %S/../../models/init_bits.sh --mesh 1x1 -o %t.one.plan
# RUN: grep -c sh_init %t.plan | FileCheck %s --check-prefix=CODE
# RUN: %shardrun %t.plan --seed 7 --quiet --outputs %t.k.safetensors
# RUN: %shardrun %t.cpu.plan --seed 7 --quiet --outputs %t.c.safetensors
# RUN: %shardrun %t.one.plan --seed 7 --quiet --outputs %t.1.safetensors
# RUN: cmp %t.k.safetensors %t.c.safetensors
# RUN: cmp %t.k.safetensors %t.1.safetensors
# CHECK: // made from the seed on a GPU by module {{[0-9]+}} (sh_init)
# CPU-NOT: sh_init
# CODE: {{^[1-9][0-9]*$}}
