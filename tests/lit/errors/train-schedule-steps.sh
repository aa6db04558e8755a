# RUN: %expect 1 %shardc %s --mesh 2 -o %t.plan 2>&1 | FileCheck %s
# RUN: test ! -e %t.plan
# A decay needs steps past the warmup; warmup and steps are counts.
# RUN: sed 's/steps = 10)/steps = 10.5)/' %s > %t.sh
# RUN: %expect 1 %shardc %t.sh --mesh 2 -o %t.plan 2>&1 | FileCheck %s --check-prefix=COUNT
mesh dp
input x : f32[8, 4]
param w : f32[4, 4] = normal(0.1)
loss = mse(x @ w, x)
train loss with adamw(lr = 0.1, warmup = 10, decay = cosine, steps = 10)
# CHECK: {{^}}{{.*}}train-schedule-steps.sh:10:17: error: decay needs steps past the warmup: steps = 10, warmup = 10{{$}}
# COUNT: error: option 'steps' of adamw is out of range: 10.5
