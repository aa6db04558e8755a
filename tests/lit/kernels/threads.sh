# A plan with kernels is the same bytes whatever the compiler's threads
# (SHARDC_THREADS): each stage's kernels are made at once, then compiled
# and numbered stage by stage (NVRTC's cache is warm for the second run).
# RUN: SHARDC_THREADS=1 %shardc %S/../../../examples/pipeline.sh --mesh 1x4x1 --microbatches 8 --arch sm_90 -o %t.1.plan
# RUN: SHARDC_THREADS=4 %shardc %S/../../../examples/pipeline.sh --mesh 1x4x1 --microbatches 8 --arch sm_90 -o %t.4.plan
# RUN: cmp %t.1.plan %t.4.plan
# Built and rolled a batch of as many stages as threads at a time: 3
# threads make batches of 3 stages and 1, the same bytes; so does a plan
# of one microbatch, whose stages do not roll and keep their kernels as
# they were
# RUN: SHARDC_THREADS=3 %shardc %S/../../../examples/pipeline.sh --mesh 1x4x1 --microbatches 8 --arch sm_90 -o %t.3.plan
# RUN: cmp %t.1.plan %t.3.plan
# RUN: SHARDC_THREADS=1 %shardc %S/../../../examples/pipeline.sh --mesh 1x4x1 --microbatches 1 --arch sm_90 -o %t.1m.plan
# RUN: SHARDC_THREADS=3 %shardc %S/../../../examples/pipeline.sh --mesh 1x4x1 --microbatches 1 --arch sm_90 -o %t.3m.plan
# RUN: cmp %t.1m.plan %t.3m.plan
# Each of the 4 stages has kernels of its own
# RUN: %shardc %S/../../../examples/pipeline.sh --mesh 1x4x1 --microbatches 8 --arch sm_90 --emit schedule | FileCheck %s
# CHECK: {{^}}stage 0 (pp = 0): {{.*}} {{[1-9][0-9]*}} kernels of
# CHECK: {{^}}stage 1 (pp = 1): {{.*}} {{[1-9][0-9]*}} kernels of
# CHECK: {{^}}stage 2 (pp = 2): {{.*}} {{[1-9][0-9]*}} kernels of
# CHECK: {{^}}stage 3 (pp = 3): {{.*}} {{[1-9][0-9]*}} kernels of
