# Multi-tensor optimizer kernels cut where the layers repeat (fuse.c, "runs
# that repeat"). transformer.sh in bf16 with 6 layers: each layer's 12
# params are updated alike, 8 pointers each, so two layers and the step
# count (193 pointers) fit a kernel and three do not. The runs start where
# the layers' stretch starts: the embeddings' two updates are a kernel of
# their own, then two layers a kernel, twice, and the last run takes the
# last two layers and what follows (the final norm's two params and the
# untied output layer). The two runs of two layers are one code: the plan
# compiles it once and runs the second as the first ("as k..."). Cut
# greedily at the limit, the runs began at a new place in the layer each
# time, each its own code. (--emit schedule names the code without
# compiling it; the kernels run against the CPU backend in
# unit/test_kernel_emulate's transformer and llama cases.)
# RUN: %shardc %S/../../../examples/transformer.sh -D L=6 --dtype bf16 --mesh 1x1 --arch sm_80 --emit schedule > %t.sched
# RUN: FileCheck %s < %t.sched
# CHECK: // kernel k{{[0-9]+}}_cast_adam_m_adam_v_adamw_x2 (elementwise
# CHECK: // kernel [[LAYERS:k[0-9]+_cast_adam_m_adam_v_adamw_x24]] (elementwise
# CHECK: // kernel k{{[0-9]+}}_cast_adam_m_adam_v_adamw_x24 as [[LAYERS]] (elementwise
# CHECK: // kernel k{{[0-9]+}}_cast_adam_m_adam_v_adamw_x27 (elementwise
# CHECK-NOT: _adamw
