# shardrun --trace: the measured timeline, in the estimate's format. Every
# rank present, streams that never overlap, the same instructions in every
# step, and per rank and step the collectives, sends and recvs of shardc's
# estimate in the same order; with the local communicator each send
# overlaps its recv (a rendezvous). The pipeline runs smaller than the
# example (S 32, D 64, V 128): what is checked does not depend on sizes.
# RUN: %shardc %S/../../../examples/pipeline.sh --mesh 2x2x2 -D S=32 -D D=64 -D V=128 -o %t.plan --trace %t-est.json
# RUN: %shardrun %t.plan --steps 2 --trace %t.json | FileCheck %s --check-prefix=SAY
# SAY: trace written to {{.*}}.json
# RUN: python3 %S/../../tools/check_trace.py %t.json --ranks 8 --steps 2 --like %t-est.json --rendezvous | FileCheck %s
# CHECK: rank 0 stage 0: collective {{[1-9][0-9]*}} compute {{[1-9][0-9]*}} p2p 16 source {{[1-9][0-9]*}}
# CHECK: rank 7 stage 1: collective {{[1-9][0-9]*}} compute {{[1-9][0-9]*}} p2p 16 source {{[1-9][0-9]*}}
# RUN: FileCheck %s --check-prefix=META < %t.json
# META: "otherData": {"source": "shardrun", "backend": "cpu", "comm": "local", "events_lost": 0}
# META: {"name": "process_name", "ph": "M", "pid": 0, "args": {"name": "rank 0 (stage 0)"}}
#
# Without a pipeline, and under MPI (the events gathered to rank 0, which
# writes the file).
# RUN: %shardc %S/../../../examples/mlp.sh --mesh 2x2 -o %t-mlp.plan --trace %t-mlp-est.json
# RUN: %mpirun -np 4 %shardrun %t-mlp.plan --comm mpi --steps 3 --trace %t-mpi.json --quiet
# RUN: python3 %S/../../tools/check_trace.py %t-mpi.json --ranks 4 --steps 3 --like %t-mlp-est.json | FileCheck %s --check-prefix=MPI
# MPI: rank 0 stage 0: collective 9 compute {{[1-9][0-9]*}} source
# MPI: rank 3 stage 0: collective 9
# RUN: FileCheck %s --check-prefix=MPIMETA < %t-mpi.json
# MPIMETA: "comm": "mpi"
#
# A file that cannot be written fails the run after the steps.
# RUN: %expect 1 %shardrun %t-mlp.plan --trace /nonexistent/dir/t.json --quiet 2>&1 | FileCheck %s --check-prefix=IO
# IO: shardrun: error: {{.*}}/nonexistent/dir/t.json
# RUN: %expect 2 %shardrun %t-mlp.plan --trace 2>&1 | FileCheck %s --check-prefix=USAGE
# USAGE: shardrun: error: --trace
