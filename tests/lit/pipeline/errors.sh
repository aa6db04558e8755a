# Models the pipeline split rejects, each with its reason and exit code 1.
# (A param read on several stages is not among them: LANGUAGE.md §12,
# tests/diff/regress/pipeline-shared-param.sh.)
# RUN: sed 's/^#STATS //' %s > %t-stats.sh
# RUN: %expect 1 %shardc %t-stats.sh --mesh 1x2 -o %t.plan 2>&1 | FileCheck %s --check-prefix=STATS
# RUN: test ! -e %t.plan
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
#
loss = mse(x, y)
output loss
pipeline microbatches 2 schedule gpipe
train loss with sgd(lr = 0.1)
# Each error follows LANGUAGE.md §11: file:line:col, the source line, a
# caret under the op at fault (or the declaration, or the pipeline line).
# A statistic over the batch read back by every row needs the whole batch.
# STATS: {{^}}{{.*}}-stats.sh:26:7: error: cannot pipeline '-': it uses the result of mean (line 26), which needs the whole batch, together with per-microbatch values; pipelining needs the batch rows computed independently{{$}}
# STATS-NEXT: {{^}}x = x - mean(x, 0){{$}}
# STATS-NEXT: {{^}}      ^{{$}}
# INTER: {{^}}{{.*}}-int.sh:30:1: error: cannot pipeline: the interleaved schedule needs the microbatches (2) to be a multiple of the stages (4){{$}}
# INTER-NEXT: {{^}}pipeline microbatches 2 schedule interleaved(2){{$}}
# INTER-NEXT: {{^}}^{{$}}
# x split over the pipeline axis: the error is at its declaration, not at
# the collective over pp that the partitioner made for the loss.
# AXIS: {{^}}{{.*}}-axis.sh:15:7: error: cannot pipeline: 'x' is split over pp, the pipeline axis, whose stages hold different repetitions; split it over the other axes only{{$}}
# AXIS-NEXT: {{^}}input x : f32[B, 16] shard(pp, _){{$}}
# AXIS-NEXT: {{^}}      ^{{$}}
# 6 rows split over dp = 2 leave each rank 3, which 2 microbatches do not divide.
# SPLIT: {{^}}{{.*}}errors.sh:15:7: error: cannot pipeline: input 'x': its local batch of 3 rows does not split into 2 microbatches{{$}}
# SPLIT-NEXT: {{^}}input x : f32[B, 16] shard(dp, _){{$}}
# SPLIT-NEXT: {{^}}      ^{{$}}
