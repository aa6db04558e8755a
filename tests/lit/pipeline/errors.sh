# Models the pipeline split rejects, each with its reason and exit code 1.
# RUN: sed 's/^#STATS //' %s > %t-stats.sh
# RUN: %expect 1 %shardc %t-stats.sh --mesh 1x2 -o %t.plan 2>&1 | FileCheck %s --check-prefix=STATS
# RUN: test ! -e %t.plan
# RUN: sed 's/^#SHARED //' %s > %t-shared.sh
# RUN: %expect 1 %shardc %t-shared.sh --mesh 1x2 -o %t.plan 2>&1 | FileCheck %s --check-prefix=SHARED
# RUN: sed 's/microbatches 2 schedule gpipe/microbatches 2 schedule interleaved(2)/' %s > %t-int.sh
# RUN: %expect 1 %shardc %t-int.sh --mesh 1x4 -DL=8 -o %t.plan 2>&1 | FileCheck %s --check-prefix=INTER
# RUN: sed 's/^input x : f32\[B, 16\] shard(dp, _)$/input x : f32[B, 16] shard(pp, _)/' %s > %t-axis.sh
# RUN: %expect 1 %shardc %t-axis.sh --mesh 1x2 -o %t.plan 2>&1 | FileCheck %s --check-prefix=AXIS
# RUN: %expect 1 %shardc %s --mesh 2x2 -DB=6 -o %t.plan 2>&1 | FileCheck %s --check-prefix=SPLIT
mesh dp, pp
let B = 8
let L = 2
input x : f32[B, 16] shard(dp, _)
input y : f32[B, 16] shard(dp, _)
param w0 : f32[16, 16] = normal(0.1)
block layer(h : f32[B, 16]) -> f32[B, 16] {
    param w : f32[16, 16] = normal(0.1)
    return relu(h @ w)
}
x = x @ w0
repeat L as layers over pp {
    x = layer(x)
}
#STATS x = x - mean(x, 0)
#SHARED x = x @ w0
loss = mse(x, y)
output loss
pipeline microbatches 2 schedule gpipe
train loss with sgd(lr = 0.1)
# A statistic over the batch read back by every row needs the whole batch.
# STATS: shardc: error: cannot pipeline: line 26: -: uses the result of mean (line 26), which needs the whole batch, together with per-microbatch values; pipelining needs the batch rows computed independently
# w0 on the first stage and again after the repeat, on the last: its two
# gradients are on two stages.
# SHARED: shardc: error: cannot pipeline: line 22: +: combines per-step values of stages 1 and 0 (a param used on both?); a value shared by stages is not supported
# INTER: shardc: error: cannot pipeline: the interleaved schedule needs the microbatches (2) to be a multiple of the stages (4)
# AXIS: shardc: error: cannot pipeline: line {{[0-9]+}}: {{.*}}: runs over the pipeline axis pp
# 6 rows split over dp = 2 leave each rank 3, which 2 microbatches do not divide.
# SPLIT: shardc: error: cannot pipeline: line 15: input: input 'x': its local batch of 3 rows does not split into 2 microbatches
