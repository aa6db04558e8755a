# RUN: %shardc %S/embed.model --mesh 2 -o %t.plan
# RUN: %expect 2 %shardrun %t.plan --ranks 4 2>&1 | FileCheck %s
# CHECK: shardrun: error: --ranks 4, but the plan's mesh has 2 ranks
