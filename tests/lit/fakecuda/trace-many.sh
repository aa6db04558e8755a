# A trace of a long pipeline on the pretend driver: 2 steps of pipeline.sh
# on 2x2x2, gpipe over 32 microbatches. --trace makes two events an
# instruction, thousands alive at once on each of 8 ranks. The driver had
# looked a handle up by walking the list of every live one, at every
# call, and this run took more than 100 s (a differential soak called it
# a hang, seed 2754004); with the handles in a hash set, about a second.
# The run must end within 60 s, lose no event, leave nothing alive, and
# its timeline pass check_trace.py against the estimate.
# RUN: %shardc %S/../../../examples/pipeline.sh --mesh 2x2x2 --microbatches 32 --schedule gpipe -D B=64 --arch sm_90 -o %t.plan --trace %t-est.json
# RUN: env LD_LIBRARY_PATH=$FAKECUDA FAKECUDA_LOG=%t.log timeout 60 %shardrun %t.plan --backend cuda --steps 2 --trace %t.json --quiet
# RUN: FileCheck %s < %t.json
# RUN: awk -f %S/no-leaks.awk %t.log
# RUN: python3 %S/../../tools/check_trace.py %t.json --ranks 8 --steps 2 --like %t-est.json --like-launches | FileCheck %s --check-prefix=PIPE
# CHECK: "otherData": {"source": "shardrun", "backend": "cuda", "comm": "local", "events_lost": 0}
# PIPE: rank 0 stage 0: collective {{[1-9][0-9]*}} compute {{[1-9][0-9]*}} kernel {{[1-9][0-9]*}} p2p 128 source {{[1-9][0-9]*}}
# PIPE: rank 7 stage 1: collective {{[1-9][0-9]*}} compute {{[1-9][0-9]*}} kernel {{[1-9][0-9]*}} p2p 128 source {{[1-9][0-9]*}}
