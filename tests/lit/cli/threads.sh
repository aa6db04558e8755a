# The compiler's threads ($SHARDC_THREADS, else a thread per processor) do
# not change what it makes: a pipeline's stages, bucketed and verified on
# one thread or on four, print the same IR, and the plans, whose stages
# are rolled into loop form at once, are the same bytes (2 and 4 stages).
# A value that is not a count from 1 to 64 is a usage error.
# RUN: SHARDC_THREADS=1 %shardc %S/../../../examples/pipeline.sh --mesh 1x4x1 --stop-after=verify > %t.1.ir
# RUN: SHARDC_THREADS=4 %shardc %S/../../../examples/pipeline.sh --mesh 1x4x1 --stop-after=verify > %t.4.ir
# RUN: cmp %t.1.ir %t.4.ir
# RUN: grep -c '^// ---- stage . of 4 ----$' %t.4.ir | grep -qx 4
# RUN: SHARDC_THREADS=1 %shardc %S/../../../examples/pipeline.sh --mesh 2x2x2 --schedule 'interleaved(2)' --zero 1 -o %t.1.plan
# RUN: SHARDC_THREADS=4 %shardc %S/../../../examples/pipeline.sh --mesh 2x2x2 --schedule 'interleaved(2)' --zero 1 -o %t.4.plan
# RUN: cmp %t.1.plan %t.4.plan
# RUN: SHARDC_THREADS=1 %shardc %S/../../../examples/pipeline.sh --mesh 1x4x1 --microbatches 8 -o %t.1s.plan
# RUN: SHARDC_THREADS=3 %shardc %S/../../../examples/pipeline.sh --mesh 1x4x1 --microbatches 8 -o %t.3s.plan
# RUN: cmp %t.1s.plan %t.3s.plan
# RUN: %expect 2 env SHARDC_THREADS=0 %shardc %S/../../../examples/mlp.sh 2>&1 | FileCheck %s
# RUN: %expect 2 env SHARDC_THREADS=8x %shardc %S/../../../examples/mlp.sh 2>&1 | FileCheck %s --check-prefix=JUNK
# CHECK: {{^}}shardc: error: $SHARDC_THREADS: '0' is not a count of threads from 1 to 64{{$}}
# JUNK: {{^}}shardc: error: $SHARDC_THREADS: '8x' is not a count of threads from 1 to 64{{$}}
