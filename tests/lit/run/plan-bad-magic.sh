# A model file is not a plan.
# RUN: %expect 1 %shardrun %S/embed.model 2>&1 | FileCheck %s
# CHECK: shardrun: error: {{.*}}embed.model: not a shardc plan (bad magic)
