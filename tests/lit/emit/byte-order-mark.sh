# A UTF-8 byte order mark at the start of a model (or of textual IR) is
# skipped: the same IR as without it, and columns on line 1 count from
# after it, which the source line shown does not hold.
# RUN: printf '\357\273\277' > %t.bom.sh && cat %S/../../../examples/mlp.sh >> %t.bom.sh
# RUN: %shardc %S/../../../examples/mlp.sh --mesh 2x2 --emit ir > %t.want
# RUN: %shardc %t.bom.sh --mesh 2x2 --emit ir > %t.got
# RUN: cmp %t.want %t.got
# RUN: printf '\357\273\277' > %t.bom.ir && cat %t.want >> %t.bom.ir
# RUN: %shardc %t.bom.ir --emit ir | cmp - %t.want
# RUN: printf '\357\273\277mesh dp, tp, dp\n' > %t.err.sh
# RUN: %expect 1 %shardc %t.err.sh --mesh 2x2x2 2>&1 | FileCheck %s
# CHECK: {{^}}{{.*}}t.err.sh:1:14: error: mesh axis 'dp' is declared twice{{$}}
# CHECK-NEXT: {{^}}mesh dp, tp, dp{{$}}
# CHECK-NEXT: {{^}}             ^{{$}}
