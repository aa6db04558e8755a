# Every rank of a launched job reads the same arguments: a usage error is
# printed once, by rank 0 (the others exit 2 without a word), in shardrun's
# own checks and in the check of its output files alike.
# RUN: %shardc %S/embed.model --mesh 2 -o %t.plan
# RUN: not %mpirun -np 3 %shardrun %t.plan --bogus 2>&1 | FileCheck %s --implicit-check-not="shardrun: error"
# CHECK: shardrun: error: unknown option '--bogus'
# RUN: not %mpirun -np 3 %shardrun %t.plan --outputs %t.plan 2>&1 | FileCheck %s --check-prefix=OUT --implicit-check-not="shardrun: error"
# OUT: shardrun: error: --outputs {{.*}} is the plan
