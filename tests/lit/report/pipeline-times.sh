# A pipeline stage's report lists each collective of a task (and each send
# and receive between stages) once, with the times it runs a step: one per
# microbatch. With 16 microbatches of the same size as 4's, every stage has
# as many entries as with 4, each per-microbatch entry runs 16 times, the
# data-parallel gradient sum once (no "times"), and the bytes sent are
# 4 times 4's less what is sent once.
# RUN: %shardc %S/../../../examples/pipeline.sh --mesh 2x2x1 --microbatches 4 -D B=16 --report json > %t4.json
# RUN: %shardc %S/../../../examples/pipeline.sh --mesh 2x2x1 --microbatches 16 -D B=64 --report json > %t16.json
# RUN: python3 -c "import json,sys; A=json.load(open(sys.argv[1])); B=json.load(open(sys.argv[2])); a=A['stages']; b=B['stages']; print([len(s['collectives']) for s in a], [len(s['collectives']) for s in b], sorted({c.get('times', 1) for s in b for c in s['collectives']}), all(t['bytes_sent'] - f['bytes_sent'] == 12 * sum(e['bytes'] for e in y['each'] if e.get('times', 1) == 16) for f, t, y in zip(a, b, B['bytes'])), all(sum(e['bytes'] * e.get('times', 1) for e in y['each']) == s['bytes_sent'] for s, y in zip(b, B['bytes'])))" %t4.json %t16.json | FileCheck %s
# CHECK: [3, 4] [3, 4] [1, 16] True True
# RUN: %shardc %S/../../../examples/pipeline.sh --mesh 2x2x1 --microbatches 16 -D B=64 --report | FileCheck %s --check-prefix=TEXT
# TEXT: collectives (program order):
# TEXT: 0 send pp->1 f32 65536 262144 forward, 16 times
# TEXT-NEXT: 1 recv pp->1 f32 65536 0 backward, 16 times
# TEXT-NEXT: 2 all_reduce dp f32 1872384 7489536 backward
# TEXT-NEXT: bytes sent by kind: send 4194304 (16), recv 0 (16), all_reduce 7489536 (1)
