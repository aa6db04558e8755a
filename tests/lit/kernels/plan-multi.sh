# Multi-tensor optimizer kernels in a plan: the bf16 MLP with adamw and f32
# master weights, on 2x2, without ZeRO (the three updates, each a cast of
# the gradient, adam_m, adam_v, adamw on the master and a cast to bf16,
# are one kernel standing for the instructions of all three, at the last)
# and with ZeRO 1 (the gradients' bucket reduce_scattered at the end of the
# backward, each update reading its shard out of it: again one kernel for
# the three, on the shards, then the params' all_gathers). The CPU backend
# runs the instructions one by one on the same
# memory plan: two training steps give the bytes of a CPU-only plan's
# outputs and params.
# RUN: sed 's/^train .*/& zero 1 over dp/' %S/../../models/mlp_bf16.sh > %t.z1.sh
# RUN: %shardc %S/../../models/mlp_bf16.sh --mesh 2x2 --arch sm_80 --emit schedule | FileCheck %s --check-prefix=DP
# RUN: %shardc %t.z1.sh --mesh 2x2 --arch sm_80 --emit schedule | FileCheck %s --check-prefix=Z1
# RUN: %shardc %S/../../models/mlp_bf16.sh --mesh 2x2 --arch sm_80 -o %t.plan
# RUN: %shardrun %t.plan --seed 3 --steps 2 --quiet --outputs %t.k.safetensors --save-params %t.k.params.safetensors
# RUN: %shardc %S/../../models/mlp_bf16.sh --mesh 2x2 --arch none -o %t.cpu.plan
# RUN: %shardrun %t.cpu.plan --seed 3 --steps 2 --quiet --outputs %t.cpu.safetensors --save-params %t.cpu.params.safetensors
# RUN: cmp %t.k.safetensors %t.cpu.safetensors
# RUN: cmp %t.k.params.safetensors %t.cpu.params.safetensors
# RUN: %shardc %t.z1.sh --mesh 2x2 --arch sm_80 -o %t.z1.plan
# RUN: %shardrun %t.z1.plan --seed 3 --steps 2 --quiet --outputs %t.z1k.safetensors --save-params %t.z1k.params.safetensors
# RUN: %shardc %t.z1.sh --mesh 2x2 --arch none -o %t.z1.cpu.plan
# RUN: %shardrun %t.z1.cpu.plan --seed 3 --steps 2 --quiet --outputs %t.z1cpu.safetensors --save-params %t.z1cpu.params.safetensors
# RUN: cmp %t.z1k.safetensors %t.z1cpu.safetensors
# RUN: cmp %t.z1k.params.safetensors %t.z1cpu.params.safetensors
# DP: // kernel k{{[0-9]+}}_cast_adam_m_adam_v_adamw_x3 (elementwise, grid {{[0-9]+}}, block {{[0-9]+}}, 0 shared bytes): runs {{(%[0-9]+, )+}}%{{[0-9]+}}; reads
# DP-NOT: _x{{[0-9]}} (
# Z1: reduce_scatter
# Z1: // kernel k{{[0-9]+}}_cast_adam_m_adam_v_adamw_x3 (elementwise
# Z1-NEXT: all_gather
# Z1-NEXT: all_gather
# Z1-NEXT: all_gather
