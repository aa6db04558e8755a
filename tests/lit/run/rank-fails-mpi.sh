# The same failure under MPI: the failing process aborts the job, and
# mpirun ends with an error instead of hanging.
# RUN: %shardc %S/embed.model --mesh 2 -o %t.plan
# RUN: python3 %S/../../tools/make_st.py %t.in ids=I32[4,3]:0,1,2,3,4,5,6,7,1,2,3,9
# RUN: not %mpirun -np 2 %shardrun %t.plan --comm mpi --inputs %t.in 2>&1 | FileCheck %s
# CHECK: shardrun: error: rank 1: {{.*}}/embed.model:6:5: instruction 3 (embedding): embedding id 9 at index 5 is outside the table's 8 rows
