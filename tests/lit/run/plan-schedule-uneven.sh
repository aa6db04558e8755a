# An uneven pipeline split (LANGUAGE.md §12) shown by --emit schedule: the
# 408M GPT's 24 layers over 4 stages go 7, 7, 7 and 3, the last stage also
# holding the output layer over 51200 words (its FLOPs about 4 layers'),
# and with interleaved(2) the 8 chunks are filled evenly in turn (stages
# of 7, 6, 7 and 4 layers plus the output layer).
# RUN: %shardc %S/../../../examples/pipeline.sh -D L=24 -D B=32 -D S=1024 -D D=1024 -D NH=16 -D V=51200 --mesh 1x4x1 --emit schedule | FileCheck %s
# RUN: %shardc %S/../../../examples/pipeline.sh -D L=24 -D B=32 -D S=1024 -D D=1024 -D NH=16 -D V=51200 --mesh 1x4x1 --schedule 'interleaved(2)' --emit schedule | FileCheck %s --check-prefix=IL
# RUN: %shardc %S/../../../examples/pipeline.sh -D L=5 --mesh 1x2x1 --emit schedule | FileCheck %s --check-prefix=FIVE
# CHECK: # repetitions of the pipelined repeat per stage: 0-6 7-13 14-20 21-23
# IL: # repetitions of the pipelined repeat per chunk: 0-2 (stage 0) 3-5 (stage 1) 6-9 (stage 2) 10-12 (stage 3) 13-16 (stage 0) 17-19 (stage 1) 20-22 (stage 2) 23 (stage 3)
# FIVE: # repetitions of the pipelined repeat per stage: 0-2 3-4
