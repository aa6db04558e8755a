# --time-passes prints the wall time of the frontend and of each pass that
# ran, in the pipeline's order (fuse only with kernels), then of what was
# written and the total, on stderr; the plan is made as without it.
# RUN: %shardc %S/../../../examples/mlp.sh --mesh 2x2 --arch none --time-passes -o %t.plan 2> %t.err
# RUN: test -s %t.plan
# RUN: FileCheck %s < %t.err
# CHECK:      shardc: wall time, seconds
# CHECK-NEXT:   frontend {{ *[0-9]+\.[0-9]{3}$}}
# CHECK-NEXT:   autodiff {{ *[0-9]+\.[0-9]{3}$}}
# CHECK-NEXT:   input-init
# CHECK-NEXT:   propagate
# CHECK-NEXT:   partition
# CHECK-NEXT:   pipeline-split
# CHECK-NEXT:   bucket
# CHECK-NEXT:   verify
# CHECK-NEXT:   memplan
# CHECK-NEXT:   other
# CHECK-NEXT:   the plan {{ *[0-9]+\.[0-9]{3}$}}
# CHECK-NEXT:   total {{ *[0-9]+\.[0-9]{3}$}}
# With --stop-after, only the passes that ran, and the pass's text.
# RUN: %shardc %S/../../../examples/mlp.sh --mesh 2x2 --stop-after=partition --time-passes 2>&1 >/dev/null | FileCheck %s --check-prefix=STOP
# STOP:      frontend
# STOP-NEXT: autodiff
# STOP-NEXT: input-init
# STOP-NEXT: propagate
# STOP-NEXT: partition
# STOP-NEXT: other
# STOP-NEXT: the pass's text
# STOP-NEXT: total
