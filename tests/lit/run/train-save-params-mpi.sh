# --save-params under MPI: every process takes part in the gathering, rank 0
# writes; the file is the one the local communicator writes.
# RUN: %shardc %S/train.model --mesh 2 -o %t.plan
# RUN: %shardrun %t.plan --steps 3 --quiet --save-params %t.local
# RUN: %mpirun -np 2 %shardrun %t.plan --comm mpi --steps 3 --save-params %t.mpi | FileCheck %s
# CHECK: step 3/3  loss
# CHECK: params saved to {{.*}}.mpi
# RUN: cmp %t.local %t.mpi
