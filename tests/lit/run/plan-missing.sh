# RUN: %expect 1 %shardrun %t.nothing 2>&1 | FileCheck %s
# CHECK: shardrun: error: {{.*}}nothing: cannot open: No such file or directory
