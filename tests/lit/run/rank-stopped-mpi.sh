# A rank that stops (SIGSTOP) under MPI does not hang the job: its peer's
# all_reduce (or the step's gathering of the loss, if that is where rank 1
# stopped) times out (--timeout-ms 500) and fails naming the rank, the
# instruction and the peer that does not answer; shardrun then ends the
# job with exit code 6, another rank's failure (MPI_Abort), well within
# the 20 s tools/stop_rank.sh allows, and no process is left. Each rank
# writes its pid for the helper before it starts shardrun.
# RUN: %shardc %S/train.model --mesh 2 -o %t.plan
# RUN: %S/../../tools/stop_rank.sh 1 20 %t.d %mpirun -np 2 sh -c \
# RUN:   'echo $$ > %t.d/pid.${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-$PMIX_RANK}}; exec "$0" "$@"' \
# RUN:   %shardrun %t.plan --comm mpi --steps 100000000 --timeout-ms 500 2>&1 | FileCheck %s
# CHECK: step 1/100000000
# CHECK: step 2/100000000
# CHECK: shardrun: error: rank 0: {{(.*/train.model:[0-9]+:[0-9]+: )?(instruction [0-9]+ \(all_reduce\): timed out after 500 ms in all_reduce|gathering 'loss': timed out after 500 ms in all_gather)}} over axes (dp) (group of 2 ranks, member 0): member 1 (rank 1) does not answer (stopped, or busy outside communication)
# CHECK: stop_rank: the job ended with exit status 6
