# RUN: %shardc %S/embed.model --mesh 2 -o %t.plan
# RUN: not %mpirun -np 3 %shardrun %t.plan --comm mpi 2>&1 | FileCheck %s
# CHECK: shardrun: error: the plan's mesh dp=2 has 2 ranks, but MPI started 3 processes: run mpirun -np 2
