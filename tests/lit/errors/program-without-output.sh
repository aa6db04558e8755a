# RUN: %expect 1 %shardc %s --mesh 2 -o %t.plan 2>&1 | FileCheck %s
# RUN: test ! -e %t.plan
# A program without 'output' or 'train' computes nothing: the error points
# at its last statement, where one is missing. With an output, or with
# train alone, it compiles.
# RUN: sed 's/^y = w \* x$/&\noutput y/' %s > %t.out.sh
# RUN: %shardc %t.out.sh --mesh 2 -o %t.plan
# RUN: sed 's/^y = w \* x$/&\nloss = sum(y)\ntrain loss with sgd(lr = 0.1)/' %s > %t.train.sh
# RUN: %shardc %t.train.sh --mesh 2 -o %t.plan
mesh dp
input x : f32[8, 4] shard(dp, _)
param w : f32[8, 4] = normal(0.02)
y = w * x
# CHECK: {{^}}{{.*}}program-without-output.sh:13:1: error: the program ends here without an 'output' or a 'train', so it computes nothing{{$}}
# CHECK-NEXT: {{^}}y = w * x{{$}}
# CHECK-NEXT: {{^}}^{{$}}
