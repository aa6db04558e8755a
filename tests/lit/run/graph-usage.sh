# --graph (CUDA graphs) needs --backend cuda, a usage error (exit 2)
# before anything is loaded; with --comm nccl it is taken (the collectives
# go into the graphs: lit/fakecuda/nccl.sh). --help lists it. Any machine.
# RUN: %shardc %S/embed.model --mesh 2 -o %t.plan
# RUN: %expect 2 %shardrun %t.plan --graph 2>&1 | FileCheck %s
# RUN: %expect 2 %shardrun %t.plan --graph --backend cpu 2>&1 | FileCheck %s
# RUN: %shardrun --help | FileCheck %s --check-prefix=HELP
# CHECK: shardrun: error: --graph needs --backend cuda
# CHECK-NEXT: (run 'shardrun --help' for usage)
# HELP: --graph with --backend cuda: the first step runs as usual,
