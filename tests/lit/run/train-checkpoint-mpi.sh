# Checkpoints under MPI: every process writes its own rank's file, rank 0
# the index (after gathering their sizes) and the pointer; the folder is
# the one the local communicator writes, byte for byte. Resumed by another
# number of processes on another mesh, it goes on as the local run does.
# A file only some ranks read, missing: those ranks find it, every process
# reports the same error (printed once, by rank 0) and the job ends
# without hanging.
# RUN: %shardc %S/train-tp.model --mesh 2x2 -o %t.plan
# RUN: %shardc %S/train-tp.model --mesh 1x2 -o %t.1x2.plan
# RUN: %shardrun %t.plan --steps 3 --quiet --save %t.local
# RUN: %mpirun -np 4 %shardrun %t.plan --comm mpi --steps 3 --save %t.mpi | FileCheck %s
# CHECK: step 3/3  loss
# CHECK: checkpoint saved to {{.*}}.mpi (step 3)
# RUN: diff -r %t.local %t.mpi
# RUN: %shardrun %t.1x2.plan --resume %t.local --steps 2 --quiet --save-params %t.p.local
# RUN: %mpirun -np 2 %shardrun %t.1x2.plan --comm mpi --resume %t.mpi --steps 2 --save-params %t.p.mpi | FileCheck %s --check-prefix=RESUME
# RESUME: resumed from {{.*}}.mpi/step-00000003 at step 3
# RESUME-NEXT: made from seed 0: x, y
# RESUME-NEXT: step 4/5  loss
# RESUME-NEXT: step 5/5  loss
# RUN: cmp %t.p.local %t.p.mpi
# RUN: rm %t.mpi/step-00000003/rank-00001.safetensors
# RUN: not %mpirun -np 4 %shardrun %t.plan --comm mpi --resume %t.mpi --steps 1 > %t.out 2>&1
# RUN: FileCheck %s --check-prefix=GONE < %t.out
# GONE: shardrun: error: rank 1: {{.*}}.mpi/step-00000003/rank-00001.safetensors: cannot open: No such file or directory (it holds a shard of 'w')
# GONE-NOT: shardrun: error
# GONE-NOT: step 1
