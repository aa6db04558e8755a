# A learning-rate schedule goes on from a checkpoint: 3 steps, a
# checkpoint, then 2 more give the params 5 steps in one run give (the step
# count is the state opt.step), to the bit. The schedule reaches min_lr at
# step 4, so steps 4 and 5 differ from a restart at step 1 (which the last
# line checks).
# RUN: rm -rf %t.ck && mkdir -p %t.ck
# RUN: %shardc %s --mesh 1 -o %t.1.plan
# RUN: %shardrun %t.1.plan --quiet --steps 5 --save-params %t.five
# RUN: %shardrun %t.1.plan --quiet --steps 3 --save %t.ck
# RUN: %shardrun %t.1.plan --quiet --steps 2 --resume %t.ck --save-params %t.resumed
# RUN: cmp %t.five %t.resumed
# RUN: %shardrun %t.1.plan --quiet --steps 2 --save-params %t.restart
# RUN: not cmp -s %t.five %t.restart
mesh dp
input x : f32[8, 16] shard(dp, _)
input t : f32[8, 16] shard(dp, _)
param w : f32[16, 16] = normal(0.3)
loss = mse(tanh(x @ w), t)
train loss with sgd(lr = 0.5, momentum = 0.9, warmup = 2, decay = cosine, steps = 4, min_lr = 0.05)
