# A sequence-parallel MLP (activations split over tp along the sequence,
# weights split over tp): each weight's gradient, a sum over the batch and
# the sequence of partial products, is summed over the local rows first,
# then reduce-scattered to its layout: 512 elements, (n-1)/n of them sent.
# Before, each was all-reduced at [B, K, N] then sliced: 2048 elements, 2(n-1)/n.
# The forward is Megatron's: h gathered before the column-parallel pair
# (the weights keep their annotated split), the row-parallel product
# reduce-scattered along the sequence (its readers split it there).
# 9222 bytes per rank; 13062 before the partial sums were scattered.
# RUN: %shardc %s --mesh 1x4 --report | FileCheck %s
# CHECK:      bytes sent per rank:  9222
# CHECK:      {{^}}    0    all_gather      tp         f32              512           1536  forward{{$}}
# CHECK-NEXT: {{^}}    1    reduce_scatter  tp         f32              512           1536  forward{{$}}
# CHECK-NEXT: {{^}}    2    all_reduce      dp,tp      f32                1              6  forward{{$}}
# CHECK-NEXT: {{^}}    3    all_gather      tp         f32              512           1536  backward{{$}}
# CHECK-NEXT: {{^}}    4    all_to_all      tp         f32              256            768  backward{{$}}
# CHECK-NEXT: {{^}}    5    reduce_scatter  tp         f32              512           1536  backward{{$}}
# CHECK-NEXT: {{^}}    6    all_to_all      tp         f32              256            768  backward{{$}}
# CHECK-NEXT: {{^}}    7    reduce_scatter  tp         f32              512           1536  backward{{$}}
# CHECK-NEXT: {{^}}  bytes sent by kind:  all_gather 3072 (2), reduce_scatter 4608 (3), all_reduce 6 (1), all_to_all 1536 (2){{$}}
# CHECK-NEXT: {{^}}  bytes sent by axes:  tp 9216 (7), dp,tp 6 (1){{$}}
# CHECK-NEXT: {{^}}step time
mesh dp, tp
input x : f32[4, 8, 16] shard(dp, tp, _)
input t : f32[4, 8, 16] shard(dp, tp, _)
param a : f32[16, 32] shard(_, tp) = normal(0.2)
param b : f32[16, 32] shard(_, tp) = normal(0.2)
param c : f32[32, 16] shard(tp, _) = normal(0.2)
h = tanh(x)
u = (h @ a) * sigmoid(h @ b) shard(dp, _, tp)
y = (u @ c) shard(dp, tp, _)
loss = mse(y, t)
train loss with sgd(lr = 0.1)
