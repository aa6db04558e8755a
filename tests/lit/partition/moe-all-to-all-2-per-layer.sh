# Expert parallelism (examples/moe.sh, L = 2, the experts split over dp)
# moves the tokens to their experts and back by 2 all-to-alls per layer
# in the forward and 2 in the backward, the backward's the output
# gradient to the experts' ranks and the input gradient back. The input
# gradient's product (dispatch @ the experts' input gradient) contracts
# whole after one all-to-all: it once moved the dispatch mask by an
# all-to-all and reduce-scattered the partial product over dp (3 where 2
# suffice; 212992 bytes per rank against 163840 on 2x2, where
# --explain-sharding says so). 3581462 bytes per rank on 2x2, from 3811928
# (3713624 until clip's norm took one all-reduce and its expert weights'
# column sums were no longer all-reduced as vectors, passes/join_sums.c;
# 3712534 until the tied table's two gradients were summed once, the
# embedding's on the rank's rows over tp: lit/partition/narrow-sums.sh).
# RUN: %shardc %S/../../../examples/moe.sh --mesh 2x2 --report > %t.22
# RUN: awk '/collectives \(program/ { on = 1 } on && $3 == "dp" && $2 ~ /^(all_to|reduce)/ { print $2, $5, $NF }' %t.22 | LC_ALL=C sort | uniq -c | FileCheck %s --check-prefix=DP2
# RUN: FileCheck %s --check-prefix=BYTES < %t.22
# RUN: %shardc %S/../../../examples/moe.sh --mesh 4x1 --report | awk '/collectives \(program/ { on = 1 } on && $2 ~ /^(all_to|reduce)/ { print $2, $5, $NF }' | LC_ALL=C sort | uniq -c | FileCheck %s --check-prefix=DP4
# RUN: %shardc %S/../../../examples/moe.sh --mesh 2x2 --explain-sharding | FileCheck %s --check-prefix=WHY
# DP2:      {{^ *}}4 all_to_all 81920 backward{{$}}
# DP2-NEXT: {{^ *}}4 all_to_all 81920 forward{{$}}
# DP2-NOT:  reduce_scatter
# BYTES:    bytes sent per rank:  3581462
# DP4:      {{^ *}}4 all_to_all 40960 backward{{$}}
# DP4-NEXT: {{^ *}}4 all_to_all 40960 forward{{$}}
# DP4-NOT:  reduce_scatter
# WHY: all_to_all over dp (line 80, 163840 bytes per rank): {{.*}} for matmul (the right operand of '@' follows its result; contracting the dim whole: 163840 bytes per rank, against 212992 for contracting the dim split over dp, the product partial;
