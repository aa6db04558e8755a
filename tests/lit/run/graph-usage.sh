# --graph (CUDA graphs) needs --backend cuda and is refused with --comm
# nccl, as usage errors (exit 2) before anything is loaded; --help lists
# it. Any machine.
# RUN: %shardc %S/embed.model --mesh 2 -o %t.plan
# RUN: %expect 2 %shardrun %t.plan --graph 2>&1 | FileCheck %s
# RUN: %expect 2 %shardrun %t.plan --graph --backend cpu 2>&1 | FileCheck %s
# RUN: %expect 2 %shardrun %t.plan --graph --backend cuda --comm nccl 2>&1 | FileCheck %s --check-prefix=NCCL
# RUN: %shardrun --help | FileCheck %s --check-prefix=HELP
# CHECK: shardrun: error: --graph needs --backend cuda
# CHECK-NEXT: (run 'shardrun --help' for usage)
# NCCL: shardrun: error: --graph is not supported with --comm nccl yet (the collectives run on a stream of their own, outside the capture)
# HELP: --graph with --backend cuda: the first step runs as usual,
