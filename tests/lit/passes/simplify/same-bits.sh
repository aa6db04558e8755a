# simplify changes no bit of a training run. Each program below is
# differentiated (--stop-after=autodiff), then partitioned with and
# without simplify, and each partitioned program trained for 3 steps on
# the CPU backend: the params and optimizer states are the same bytes.
# Llama's AdamW with warmup and cosine decay (its 37 copies of each
# param's 1 - lr_t wd made once), and this bf16 MLP, whose loss's
# gradient starts from 1 times 0.3 times mse's 2 / 96 (folded in bf16)
# and whose AdamW decays under a linear schedule.
# RUN: %shardc %S/../../../../examples/llama.sh -D L=1 -D S=32 --mesh 2x2 --stop-after=autodiff -o %t.l.ir
# RUN: %shardc %t.l.ir --passes=input-init,propagate,partition -o %t.la.ir
# RUN: %shardc %t.l.ir --passes=simplify,input-init,propagate,partition -o %t.lb.ir
# RUN: %shardc %t.la.ir --arch none -o %t.la.plan
# RUN: %shardc %t.lb.ir --arch none -o %t.lb.plan
# RUN: %shardrun %t.la.plan --steps 3 --seed 5 --quiet --save-params %t.la.st
# RUN: %shardrun %t.lb.plan --steps 3 --seed 5 --quiet --save-params %t.lb.st
# RUN: cmp %t.la.st %t.lb.st
# RUN: %shardc %s --mesh 2x2 --stop-after=autodiff -o %t.m.ir
# RUN: %shardc %t.m.ir --passes=input-init,propagate,partition -o %t.ma.ir
# RUN: %shardc %t.m.ir --passes=simplify,input-init,propagate,partition -o %t.mb.ir
# RUN: %shardc %t.ma.ir --arch none -o %t.ma.plan
# RUN: %shardc %t.mb.ir --arch none -o %t.mb.plan
# RUN: %shardrun %t.ma.plan --steps 3 --seed 5 --quiet --save-params %t.ma.st
# RUN: %shardrun %t.mb.plan --steps 3 --seed 5 --quiet --save-params %t.mb.st
# RUN: cmp %t.ma.st %t.mb.st
# The folded constant is bf16's: bf16(0.3) 0.30078125 times bf16(2 / 96)
# 0.0208740234375 is 0.006278514862060547 in f32, 0.00628662109375 in bf16.
# RUN: FileCheck %s < %t.mb.ir
# CHECK: const {value = 0.00628662109375} : bf16[] auto() phase backward
mesh dp, tp
input  x  : bf16[8, 12] shard(dp, _)
input  y  : bf16[8, 12] shard(dp, _)
param  w1 : bf16[12, 32] shard(_, tp) = normal(0.5)
param  w2 : bf16[32, 12] shard(tp, _) = normal(0.5)
loss = mse(relu(x @ w1) @ w2, y) * 0.3
train loss with adamw(lr = 3e-2, wd = 0.1, warmup = 2, decay = linear, steps = 10, min_lr = 3e-3)
