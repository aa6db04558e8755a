# --time-passes prints the wall time of the frontend and of each pass that
# ran, in the pipeline's order (fuse only with kernels), then of what was
# written (a plan with its steps) and the total, on stderr; the plan is
# made as without it.
# RUN: %shardc %S/../../../examples/mlp.sh --mesh 2x2 --arch none --time-passes -o %t.plan 2> %t.err
# RUN: test -s %t.plan
# RUN: FileCheck %s < %t.err
# CHECK:      shardc: wall time, seconds
# CHECK-NEXT:   frontend {{ *[0-9]+\.[0-9]{3}$}}
# CHECK-NEXT:   autodiff {{ *[0-9]+\.[0-9]{3}$}}
# CHECK-NEXT:   simplify {{ *[0-9]+\.[0-9]{3}$}}
# CHECK-NEXT:   input-init
# CHECK-NEXT:   propagate
# CHECK-NEXT:   partition
# CHECK-NEXT:   pipeline-split
# CHECK-NEXT:   bucket
# CHECK-NEXT:   verify
# CHECK-NEXT:   memplan
# CHECK-NEXT:   other
# CHECK-NEXT:   the plan {{ *[0-9]+\.[0-9]{3}$}}
# CHECK-NEXT:     report {{ *[0-9]+\.[0-9]{3}$}}
# CHECK-NEXT:     kernels {{ *[0-9]+\.[0-9]{3}$}}
# CHECK-NEXT:     lowering
# CHECK-NEXT:     validation
# CHECK-NEXT:     loop-form
# CHECK-NEXT:     bytes
# CHECK-NEXT:     other {{ *[0-9]+\.[0-9]{3}$}}
# CHECK-NEXT:   total {{ *[0-9]+\.[0-9]{3}$}}
# The plan's steps and the rest ("other": the file written) are the plan's
# row, to the printed rounding (8 rows of 0.0005 at most each).
# RUN: awk '/^  the plan / {p = $3; on = 1; next} on && /^    / {s += $2; n++; next} {on = 0} END {d = s - p; exit !(n == 7 && d < 0.0045 && d > -0.0045)}' %t.err
# --emit loops makes the plan in memory: its steps are under --emit's row;
# --emit ir makes none.
# RUN: %shardc %S/../../../examples/pipeline.sh -D L=8 --mesh 1x4x1 --arch none --emit loops --time-passes 2>&1 >/dev/null | FileCheck %s --check-prefix=LOOPS
# LOOPS:      --emit
# LOOPS-NEXT:   report
# LOOPS:        loop-form
# LOOPS-NEXT:   bytes
# LOOPS-NEXT:   other
# LOOPS-NEXT: total
# RUN: %shardc %S/../../../examples/mlp.sh --mesh 2x2 --emit ir --time-passes 2>&1 >/dev/null | FileCheck %s --check-prefix=IR
# IR:      --emit
# IR-NEXT: total
# With --stop-after, only the passes that ran, and the pass's text.
# RUN: %shardc %S/../../../examples/mlp.sh --mesh 2x2 --stop-after=partition --time-passes 2>&1 >/dev/null | FileCheck %s --check-prefix=STOP
# STOP:      frontend
# STOP-NEXT: autodiff
# STOP-NEXT: simplify
# STOP-NEXT: input-init
# STOP-NEXT: propagate
# STOP-NEXT: partition
# STOP-NEXT: other
# STOP-NEXT: the pass's text
# STOP-NEXT: total
