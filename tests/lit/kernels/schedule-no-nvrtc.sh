# --emit schedule names each kernel with its launch but needs none of
# their code: it runs no NVRTC, so an empty cache stays empty, and it
# prints what the plan written with compiled kernels holds.
# RUN: rm -rf %t.cache %t.warm && mkdir %t.cache %t.warm
# RUN: env SHARDC_CACHE_DIR=%t.cache %shardc %S/../../../examples/mlp.sh --mesh 2x2 --arch sm_80,sm_90 --emit schedule > %t.sched
# RUN: test -z "$(ls %t.cache)"
# RUN: FileCheck %s < %t.sched
# RUN: env SHARDC_CACHE_DIR=%t.warm %shardc %S/../../../examples/mlp.sh --mesh 2x2 --arch sm_80,sm_90 -o %t.plan
# RUN: test -n "$(ls %t.warm)"
# CHECK: {{[0-9]+}} kernels of {{[0-9]+}} module{{s?}} (cubins for sm_80, sm_90; PTX for compute_90)
# CHECK: // kernel k{{[0-9]+}}_{{[a-z_0-9]+}} (elementwise, grid {{[0-9]+}}, block {{[0-9]+}}, 0 shared bytes)
