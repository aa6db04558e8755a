# RUN: %expect 1 %shardc %s --mesh 2 -o %t.plan 2>&1 | FileCheck %s
# RUN: test ! -e %t.plan
# A decay is one of three names.
mesh dp
input x : f32[8, 4]
param w : f32[4, 4] = normal(0.1)
loss = mse(x @ w, x)
train loss with sgd(lr = 0.1, warmup = 10, decay = step, steps = 100)
# CHECK: {{^}}{{.*}}train-schedule-decay-name.sh:8:52: error: decay of sgd is none, cosine or linear{{$}}
