# The report's bytes for comparison: per stage, the bytes sent summed by
# kind and by axes (text and JSON), and in the JSON each collective's bytes
# and source line. The sums equal bytes_sent, each collective has a line of
# the model, and the per-collective bytes, each times the times it runs a
# step ("times", absent: once), add up to the totals.
# RUN: %shardc %S/../../../examples/pipeline.sh --mesh 2x2x2 --report json > %t.json
# RUN: python3 -c "import json,sys; r=json.load(open(sys.argv[1])); ok=[abs(sum(b['by_kind'].values())-s['bytes_sent'])<1 and abs(sum(b['by_axes'].values())-s['bytes_sent'])<1 and len(b['each'])==len(s['collectives']) and abs(sum(e['bytes']*e.get('times',1) for e in b['each'])-s['bytes_sent'])<1 and all(e['line']>0 and e.get('times',1)==c.get('times',1) for e,c in zip(b['each'],s['collectives'])) for b,s in zip(r['bytes'],r['stages'])]; print(len(ok), 'stages', 'ok' if all(ok) and len(r['bytes'])==len(r['stages']) else 'MISMATCH', sorted(r['bytes'][0]['by_kind']), sorted(r['bytes'][0]['by_axes']))" %t.json | FileCheck %s
# CHECK: 2 stages ok ['all_reduce', 'recv', 'send'] ['dp', 'pp', 'tp']
# RUN: %shardc %S/../../../examples/mlp.sh --mesh 2x2 --report | FileCheck %s --check-prefix=TEXT
# TEXT: bytes sent by kind:  all_reduce 16916484 (3)
# TEXT-NEXT: bytes sent by axes:  tp 131072 (1), dp 16785412 (2)
