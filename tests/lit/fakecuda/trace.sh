# shardrun --backend cuda --trace on the pretend driver of tests/fakecuda,
# whose events read the host's clock in nanoseconds, moved on by at least
# one at each record (a clock ahead of the host's put a step's first
# events before the last ones of the step before), captured records
# reading it at each launch of their graph: the
# measured timeline passes check_trace.py's checks (every rank, streams
# that never overlap, the same instructions in every step, the estimate's
# collectives in order), eagerly and by graphs, on 2x2 ranks and a 2x2x2
# pipeline; every event is destroyed at the end. Eagerly, a step runs
# exactly the launches the estimate times, in its order (--like-launches:
# the kernels, cuBLASLt's matmuls, the copies and the sources, an input's
# kernel and a const's memset included; a gradients' bucket's insert or
# extract that is a view of it, which moves nothing, in neither), also
# for the transformer (its 106 inserts and extracts on 2x2 all views).
# RUN: %shardc %S/../../../examples/transformer.sh --mesh 2x2 --arch sm_90 -o %t-t.plan --trace %t-test.json
# RUN: env LD_LIBRARY_PATH=$FAKECUDA %shardrun %t-t.plan --backend cuda --steps 2 --trace %t-t.json --quiet
# RUN: python3 %S/../../tools/check_trace.py %t-t.json --ranks 4 --steps 2 --like %t-test.json --like-launches | FileCheck %s --check-prefix=T
# T: rank 0 stage 0: collective {{[1-9][0-9]*}} compute {{[1-9][0-9]*}} kernel {{[1-9][0-9]*}} source
# RUN: %shardc %S/../../../examples/mlp.sh --mesh 2x2 --arch sm_90 -o %t.plan --trace %t-est.json
# RUN: env LD_LIBRARY_PATH=$FAKECUDA FAKECUDA_LOG=%t.1 %shardrun %t.plan --backend cuda --steps 3 --trace %t.json --quiet
# RUN: python3 %S/../../tools/check_trace.py %t.json --ranks 4 --steps 3 --like %t-est.json --like-launches | FileCheck %s
# RUN: awk -f %S/no-leaks.awk %t.1
# RUN: env LD_LIBRARY_PATH=$FAKECUDA FAKECUDA_LOG=%t.2 %shardrun %t.plan --backend cuda --steps 3 --graph --trace %t-g.json --quiet
# RUN: python3 %S/../../tools/check_trace.py %t-g.json --ranks 4 --steps 3 --like %t-est.json | FileCheck %s
# RUN: awk -f %S/no-leaks.awk %t.2
# CHECK: rank 0 stage 0: collective 9 compute {{[1-9][0-9]*}} kernel {{[1-9][0-9]*}} source
# CHECK: rank 3 stage 0: collective 9
# RUN: FileCheck %s --check-prefix=META < %t.json
# META: "otherData": {"source": "shardrun", "backend": "cuda", "comm": "local", "events_lost": 0}
# RUN: %shardc %S/../../../examples/pipeline.sh --mesh 2x2x2 --arch sm_90 -o %t-p.plan --trace %t-pest.json
# RUN: env LD_LIBRARY_PATH=$FAKECUDA FAKECUDA_LOG=%t.3 %shardrun %t-p.plan --backend cuda --steps 2 --trace %t-p.json --quiet
# RUN: python3 %S/../../tools/check_trace.py %t-p.json --ranks 8 --steps 2 --like %t-pest.json --like-launches | FileCheck %s --check-prefix=PIPE
# RUN: awk -f %S/no-leaks.awk %t.3
# PIPE: rank 0 stage 0: collective {{[1-9][0-9]*}} compute {{[1-9][0-9]*}} kernel {{[1-9][0-9]*}} p2p 16 source {{[1-9][0-9]*}}
# PIPE: rank 7 stage 1: collective {{[1-9][0-9]*}} compute {{[1-9][0-9]*}} kernel {{[1-9][0-9]*}} p2p 16 source {{[1-9][0-9]*}}
