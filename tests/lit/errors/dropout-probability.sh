# RUN: %expect 1 %shardc %s --mesh 2 -o %t.plan 2>&1 | FileCheck %s
# RUN: test ! -e %t.plan
# dropout's probability is at least 0 and below 1 (1 would drop all and
# divide by zero).
mesh dp
input x : f32[8, 4] shard(dp, _)
param w : f32[4, 4] = normal(0.1)
y = dropout(x @ w, 1.0)
loss = mean(y * y)
train loss with sgd(lr = 0.1)
# CHECK: {{^}}{{.*}}dropout-probability.sh:8:20: error: dropout's probability must be at least 0 and below 1, got 1{{$}}
