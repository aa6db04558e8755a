# Megatron tensor parallelism moves 4 all-reduces of b·s·h per layer: 2 in
# the forward (after the attention's and the MLP's row-parallel matmul), 2
# in the backward (the input gradients of q, k and v added before one
# all-reduce, and the MLP's), plus one for the vocabulary-parallel LM
# head's input gradient. examples/transformer.sh, L = 4, tp = 4: 8 forward
# and 9 backward all-reduces of B·S·D = 262144 elements (dp halves them to
# 131072 on 2x2); the 1024-element ones are the cross-entropy's statistics,
# all-reduced in the forward only: its gradient reads them (3 all-reduces
# of b·s, none in the backward, as Megatron).
# RUN: %shardc %S/../../../examples/transformer.sh --mesh 1x4 --report | awk '/collectives \(program/ { on = 1 } on && $2 ~ /^all_/ { print $2, $5, $NF }' | LC_ALL=C sort | uniq -c | FileCheck %s --check-prefix=TP4
# RUN: %shardc %S/../../../examples/transformer.sh --mesh 2x2 --report | awk '/collectives \(program/ { on = 1 } on && $2 ~ /^all_/ && $5 == 131072 { print $2, $5, $NF }' | LC_ALL=C sort | uniq -c | FileCheck %s --check-prefix=TP2
# TP4:      {{^ *}}2 all_reduce 1024 forward{{$}}
# TP4-NEXT: {{^ *}}9 all_reduce 262144 backward{{$}}
# TP4-NEXT: {{^ *}}8 all_reduce 262144 forward{{$}}
# TP4-NEXT: {{^ *}}1 all_reduce(max) 1024 forward{{$}}
# TP4-NOT:  1024 backward
# TP2:      {{^ *}}9 all_reduce 131072 backward{{$}}
# TP2-NEXT: {{^ *}}8 all_reduce 131072 forward{{$}}
