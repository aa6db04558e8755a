# attention(q, h, h) trained: attn_dv and attn_dk run as one kernel (an
# attention pair, passes/fuse.h) whose k and v are one value. The
# kernel's parameters are attn_dk's operands, one each, then its two
# results; the plan writer counted the group's distinct inputs instead and
# stopped with an internal error ("parameter 4 ... no instruction of the
# kernel writes it"), found by the differential soak with kernels
# (DIFF_ARCH=sm_90, seed 1701023). The CPU backend runs the plan as it runs
# the CPU-only one: the same params after two steps.
# RUN: %shardc %s --mesh 1 --arch sm_90 --emit schedule | FileCheck %s
# RUN: %shardc %s --mesh 1 --arch sm_90 -o %t.plan
# RUN: %shardc %s --mesh 1 --arch none -o %t.cpu.plan
# RUN: %shardrun %t.plan --seed 3 --steps 2 --save-params %t.p.st > /dev/null
# RUN: %shardrun %t.cpu.plan --seed 3 --steps 2 --save-params %t.cpu.st > /dev/null
# RUN: cmp %t.p.st %t.cpu.st
mesh dp
input x0 : f32[4, 12, 6] shard(_, _, _)
input labels : i32[4, 12]
param w : f32[6, 6] = normal(0.4)
param u : f32[6, 6] = normal(0.4)
q = x0 @ u
h = x0 @ w
a = attention(q, h, h, causal = true)
loss = cross_entropy(a, labels)
output loss
train loss with sgd(lr = 0.05)
# CHECK: kernel k{{[0-9]+}}_attn_dv_attn_dk (row,
