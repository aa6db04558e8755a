# attention(v, v, v) with v's sequence split over tp needs v whole three
# times, as q, k and v: it is gathered once (512 elements, 1536 bytes per
# rank), not three times, and the three operands read the one result.
# RUN: %shardc %s --mesh 4 --report | FileCheck %s --check-prefix=REPORT
# RUN: %shardc %s --mesh 4 --emit sharded-ir | FileCheck %s --check-prefix=IR
# REPORT:      {{^}}    0    all_gather      tp         f32              512           1536  forward{{$}}
# REPORT-NEXT: {{^}}  bytes sent by kind:  all_gather 1536 (1){{$}}
# REPORT-NEXT: {{^}}  bytes sent by axes:  tp 1536 (1){{$}}
# REPORT-NEXT: {{^}}step time
# IR: [[G:%[0-9]+]] = all_gather %v {dim = 1, axes = [tp]} : f32[4, 8, 16] auto(_, _, _)
# IR-NEXT: %a = attention [[G]], [[G]], [[G]]
mesh tp
input x : f32[4, 8, 16] shard(_, tp, _)
v = tanh(x)
a = attention(v, v, v) shard(_, _, _)
output a
