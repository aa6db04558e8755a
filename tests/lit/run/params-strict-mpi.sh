# Strict --params under MPI: every process finds the same mismatch, rank 0
# says it once, and the job ends with exit 1 without an abort (a typo at
# the session's start, a missing param before the first step). The two
# processes' lines reach the output in either order (mpirun merges them),
# so the hint is checked after the error, not on the next line.
# RUN: %shardc %S/train.model --mesh 2 -o %t.plan
# RUN: python3 %S/../../tools/make_st.py %t.typo W=F32[4,4]:0.5
# RUN: %expect 1 %mpirun -np 2 %shardrun %t.plan --comm mpi --params %t.typo > %t.out 2>&1
# RUN: FileCheck %s --check-prefix=TYPO < %t.out
# TYPO: shardrun: error: {{.*}}.typo: the params file has 1 tensor that is no param or state of the plan: 'W' (did you mean 'w'?); and lacks 1 param of the plan: 'w'{{$}}
# TYPO-NOT: shardrun: error
# TYPO-NOT: MPI_ABORT
# RUN: python3 %S/../../tools/make_st.py %t.states opt.w.m=F32[4,4]:0
# RUN: %expect 1 %mpirun -np 2 %shardrun %t.plan --comm mpi --params %t.states > %t.out 2>&1
# RUN: FileCheck %s --check-prefix=MISSING < %t.out
# MISSING: shardrun: error: {{.*}}.states: the params file lacks 1 param of the plan: 'w'{{$}}
# MISSING: shardrun: --init-missing makes the params missing from --params by their init from the seed
# MISSING-NOT: shardrun: error
# MISSING-NOT: MPI_ABORT
# MISSING-NOT: step 1/1
