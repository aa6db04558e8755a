# The timeline costs an insert into a gradients' bucket and an extract
# out of it as the CUDA backend runs them (runtime/exec/cuda.c,
# run_bucket): nothing where the gradient is a view of its columns of a
# one-row bucket (the memory plan computed it there, or made the
# extracted gradient a view), else a copy of the gradient's bytes, not
# of the bucket's. They had been costed as kernels reading and writing
# the whole bucket: on gpt2.sh's 2x2, 68 inserts and 68 extracts of 9 to
# 10 us each, half its estimated compute.
#
# Data parallel: every gradient is a view of its bucket, so no insert or
# extract runs, and the step's estimate on the built-in h100 is 1.041 ms
# (2.121 before).
# RUN: %shardc %S/../../../examples/gpt2.sh --mesh 2x2 --arch none --trace %t.dp.json -o %t.dp.plan
# RUN: %shardc %S/../../../examples/gpt2.sh --mesh 2x2 --arch none --emit sharded-ir | grep -cE ' (insert|extract) ' | FileCheck %s --check-prefix=OPS
# RUN: python3 %s.py %t.dp.json | FileCheck %s --check-prefix=DP
# RUN: %shardc %S/../../../examples/gpt2.sh --mesh 2x2 --arch none --report | FileCheck %s --check-prefix=EST
# OPS: 136
# DP: insert 0 extract 0
# EST: step time, estimated on h100: 1.041 ms
#
# ZeRO 1 (transformer.sh on 4x1): the bucket holds a row per rank for
# the reduce_scatter, so each insert copies the gradient's rows (about a
# launch each); the extracts after it are views.
# RUN: %shardc %S/../../../examples/transformer.sh --mesh 4x1 --zero 1 --arch none --trace %t.z.json -o %t.z.plan
# RUN: python3 %s.py %t.z.json | FileCheck %s --check-prefix=ZERO
# ZERO: insert 53 extract 0 longest 4.8 us
