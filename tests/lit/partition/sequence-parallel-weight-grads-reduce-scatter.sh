# A sequence-parallel MLP (activations split over tp along the sequence,
# weights split over tp): each weight's gradient, a sum over the batch and
# the sequence of partial products, is summed over the local rows first,
# then reduce-scattered to its layout: 512 elements, (n-1)/n of them sent.
# Before, each was all-reduced at [B, K, N] then sliced: 2048 elements, 2(n-1)/n.
# The forward is Megatron's: h gathered before the column-parallel pair
# (the weights keep their annotated split), the row-parallel product
# reduce-scattered along the sequence (its readers split it there).
# The gradients of a and b read h^T along the sequence: with S = 32 their
# output gradient moved by all-to-all to the sequence split (3072 bytes)
# and the [16, 32] partial product reduce-scattered (1536) cost less than
# gathering h^T (6144), so 27654 bytes per rank (counted with the partial
# product's sum over the batch, which combine.c folds before the
# reduce-scatter). With S = 8, gathering h^T (1536) costs less than the
# exchange (768 + 1536), and it is gathered once for both weights: the two
# transposes of h are one value to reshard. 6150 bytes per rank.
# RUN: %shardc %s --mesh 1x4 --report | FileCheck %s
# RUN: %shardc %s -D S=8 --mesh 1x4 --report | FileCheck %s --check-prefix=SHORT
# CHECK:      bytes sent per rank:  27654
# CHECK:      {{^}}    0    all_gather      tp         f32             2048           6144  forward{{$}}
# CHECK-NEXT: {{^}}    1    reduce_scatter  tp         f32             2048           6144  forward{{$}}
# CHECK-NEXT: {{^}}    2    all_reduce      dp,tp      f32                1              6  forward{{$}}
# CHECK-NEXT: {{^}}    3    all_gather      tp         f32             2048           6144  backward{{$}}
# CHECK-NEXT: {{^}}    4    all_to_all      tp         f32             1024           3072  backward{{$}}
# CHECK-NEXT: {{^}}    5    reduce_scatter  tp         f32              512           1536  backward{{$}}
# CHECK-NEXT: {{^}}    6    all_to_all      tp         f32             1024           3072  backward{{$}}
# CHECK-NEXT: {{^}}    7    reduce_scatter  tp         f32              512           1536  backward{{$}}
# CHECK-NEXT: {{^}}  bytes sent by kind:  all_gather 12288 (2), reduce_scatter 9216 (3), all_reduce 6 (1), all_to_all 6144 (2){{$}}
# SHORT:      bytes sent per rank:  6150
# SHORT:      {{^}}    3    all_gather      tp         f32              512           1536  backward{{$}}
# SHORT-NEXT: {{^}}    4    all_gather      tp         f32              512           1536  backward{{$}}
# SHORT-NEXT: {{^}}  bytes sent by kind:  all_gather 4608 (3), reduce_scatter 1536 (1), all_reduce 6 (1){{$}}
mesh dp, tp
let B = 4, S = 32
input x : f32[B, S, 16] shard(dp, tp, _)
input t : f32[B, S, 16] shard(dp, tp, _)
param a : f32[16, 32] shard(_, tp) = normal(0.2)
param b : f32[16, 32] shard(_, tp) = normal(0.2)
param c : f32[32, 16] shard(tp, _) = normal(0.2)
h = tanh(x)
u = (h @ a) * sigmoid(h @ b) shard(dp, _, tp)
y = (u @ c) shard(dp, tp, _)
loss = mse(y, t)
train loss with sgd(lr = 0.1)
