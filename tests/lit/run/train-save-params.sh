# A training step: each step's line shows the loss, --save-params writes the
# params and the optimizer states after the last step, and training goes on
# from that file exactly where it stopped (the losses of steps 4 and 5 of a
# straight run). 1 rank and 2 save the same values.
# RUN: %shardc %S/train.model --mesh 2 -o %t.2.plan
# RUN: %shardc %S/train.model --mesh 1 -o %t.1.plan
# RUN: %shardrun %t.2.plan --steps 3 --save-params %t.p2 | FileCheck %s
# CHECK: step 1/3  loss {{[0-9]+\.[0-9]+}}  {{[0-9]+\.[0-9][0-9]?}} ms  {{[0-9]+}} samples/s
# CHECK-NEXT: step 2/3  loss
# CHECK-NEXT: step 3/3  loss
# CHECK: params saved to {{.*}}.p2
# RUN: %shardrun %t.2.plan --steps 5 | sed -n 's/^step [45]\/5  loss \([0-9.]*\) .*/\1/p' > %t.straight
# RUN: %shardrun %t.2.plan --steps 2 --params %t.p2 | sed -n 's/^step [12]\/2  loss \([0-9.]*\) .*/\1/p' > %t.resumed
# RUN: grep -c . %t.resumed | FileCheck %s --check-prefix=TWO
# TWO: 2
# RUN: diff %t.straight %t.resumed
# RUN: %shardrun %t.1.plan --steps 3 --quiet --save-params %t.p1
# RUN: python3 -c "import json,struct,sys; r=lambda p: (lambda b: (lambda n: {k: struct.unpack('<%df' % ((v['data_offsets'][1] - v['data_offsets'][0]) // 4), b[8 + n + v['data_offsets'][0]:8 + n + v['data_offsets'][1]]) for k, v in json.loads(b[8:8 + n]).items()})(struct.unpack('<Q', b[:8])[0]))(open(p, 'rb').read()); a = r(sys.argv[1]); c = r(sys.argv[2]); print(len(a), 'w' in a, sorted(a) == sorted(c), max(abs(x - y) for k in a for x, y in zip(a[k], c[k])) < 1e-5)" %t.p1 %t.p2 | FileCheck %s --check-prefix=SAME
# SAME: 4 True True True
