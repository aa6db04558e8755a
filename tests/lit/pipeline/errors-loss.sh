# Models pipelined training refuses, each error at the place at fault
# (LANGUAGE.md §11): a loss whose gradient needs a whole-batch result (not
# a sum or mean over the batch of per-row terms), a per-step value that
# spans the batch, an output with the batch in dimension 1. (An output made
# from two stages' params is read on one of them: tests/diff/regress.) Each line of the model is switched on by sed.
# RUN: sed 's/^#SQUARE //' %s > %t-square.sh
# RUN: %expect 1 %shardc %t-square.sh --mesh 1x2 -o %t.plan 2>&1 | FileCheck %s --check-prefix=SQUARE
# RUN: test ! -e %t.plan
# RUN: sed 's/^#LOG //' %s > %t-log.sh
# RUN: %expect 1 %shardc %t-log.sh --mesh 1x2 -o %t.plan 2>&1 | FileCheck %s --check-prefix=LOG
# RUN: sed 's/^#ROWS //' %s > %t-rows.sh
# RUN: %expect 1 %shardc %t-rows.sh --mesh 1x2 -o %t.plan 2>&1 | FileCheck %s --check-prefix=ROWS
# RUN: sed 's/^#TRANS //' %s > %t-trans.sh
# RUN: %expect 1 %shardc %t-trans.sh --mesh 1x2 -o %t.plan 2>&1 | FileCheck %s --check-prefix=TRANS
# RUN: test ! -e %t.plan
mesh dp, pp
input x : f32[8, 4] shard(dp, _)
input y : f32[8, 4] shard(dp, _)
param p : f32[8, 4] = normal(0.1)
param w0 : f32[4, 4] = normal(0.1)
param w9 : f32[4, 4] = normal(0.1)
block layer(h : f32[8, 4]) -> f32[8, 4] {
    param w : f32[4, 4] = normal(0.1)
    return relu(h @ w)
}
h = x @ w0
repeat 2 as layers over pp { h = layer(h) }
h = h @ w9
l = mean(sum(h * h, axis = 1), axis = 0) + sum(sum(p, axis = 0), axis = 0)
#SQUARE loss = l * l
#LOG loss = log(l)
#ROWS loss = mse(h + p, y)
#TRANS loss = l
#TRANS t = transpose(h, [1, 0])
#TRANS output t
output loss
train loss with sgd(lr = 0.1)
pipeline microbatches 2 schedule gpipe

# l * l: its gradient, 2 l, needs the mean over the whole batch first.
# SQUARE: {{^}}{{.*}}-square.sh:30:10: error: cannot pipeline the gradient of this operation: it depends on the result of mean (line 29), which needs the whole batch; pipelined training needs a loss that is a sum or mean over the batch of per-row terms (scaled, or added to other such terms){{$}}
# SQUARE-NEXT: {{^}}loss = l * l{{$}}
# SQUARE-NEXT: {{^}}         ^{{$}}
# LOG: {{^}}{{.*}}-log.sh:31:8: error: cannot pipeline the gradient of this operation: it depends on the result of mean (line 29), which needs the whole batch; pipelined training needs a loss that is a sum or mean over the batch of per-row terms (scaled, or added to other such terms){{$}}
# LOG-NEXT: {{^}}loss = log(l){{$}}
# LOG-NEXT: {{^}}       ^{{$}}
# p, a param of 8 rows, is not the same in every row of the batch.
# ROWS: {{^}}{{.*}}-rows.sh:32:14: error: cannot pipeline '+': a per-step value of 8 rows, made from a param, meets the per-microbatch batch dimension; pipelining needs such values to broadcast over it, or to be the same in every row{{$}}
# ROWS-NEXT: {{^}}loss = mse(h + p, y){{$}}
# ROWS-NEXT: {{^}}             ^{{$}}
# TRANS: {{^}}{{.*}}-trans.sh:35:8: error: cannot pipeline: output 't' holds the batch in its dimension 1; only an output with the batch in dimension 0 can be pipelined yet{{$}}
# TRANS-NEXT: {{^}}output t{{$}}
# TRANS-NEXT: {{^}}       ^{{$}}
