# --comm nccl runs the collectives on the GPU: it needs --backend cuda, and
# is refused (usage, exit 2) before anything is loaded otherwise; --timeout
# takes seconds, 1 to 86400. Any machine.
# RUN: %shardc %S/embed.model --mesh 2 -o %t.plan
# RUN: %expect 2 %shardrun %t.plan --comm nccl --backend cpu 2>&1 | FileCheck %s
# RUN: %expect 2 %shardrun %t.plan --comm nccl 2>&1 | FileCheck %s
# RUN: %expect 2 %shardrun %t.plan --comm nccl --backend cuda --timeout 0 2>&1 | FileCheck %s --check-prefix=TIMEOUT
# RUN: %expect 2 %shardrun %t.plan --comm nccl --backend cuda --timeout 86401 2>&1 | FileCheck %s --check-prefix=TIMEOUT
# RUN: %expect 2 %shardrun %t.plan --comm nccx 2>&1 | FileCheck %s --check-prefix=COMM
# RUN: %shardrun %t.plan --timeout 30 --quiet --comm local
# RUN: %shardrun --help | FileCheck %s --check-prefix=HELP
# CHECK: shardrun: error: --comm nccl needs --backend cuda (NCCL runs the collectives on the GPU)
# CHECK-NEXT: (run 'shardrun --help' for usage)
# TIMEOUT: shardrun: error: --timeout '{{0|86401}}': expected 1 to 86400 seconds
# COMM: shardrun: error: --comm 'nccx': expected local, mpi or nccl
# HELP: --comm local|mpi|nccl
# HELP: --timeout SECONDS
# HELP: or GPU, or --comm nccl without a usable NCCL)
