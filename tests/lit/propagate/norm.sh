# softmax, layernorm and rmsnorm keep their input's sharding, a split
# normalised dim included where partial statistics (all_reduces of one
# element per row) cost fewer bytes than gathering the dim; gains and
# biases get the last dim backward. The partitioner computes them on the
# split dim and the results stay split (tests/lit/partition/split-*.sh).
# RUN: %shardc %s --mesh 2x2 --explain-sharding | FileCheck %s
mesh dp, tp
input  x : f32[8, 16] shard(dp, tp)
param  g : f32[16] = ones
param  b : f32[16] = zeros
y = layernorm(x, g, b)
p = softmax(x)
r = rmsnorm(x, g)
output y, p, r
# CHECK: # shardings of the logical program
# CHECK-NEXT: %x = shard(dp, tp)  # annotation
# CHECK-NEXT: %g = auto(tp)  # backward from %r through rmsnorm (operand g)
# CHECK-NEXT: %b = auto(tp)  # backward from %y through layernorm (operand b)
# CHECK-NEXT: %y = auto(dp, tp)  # forward from %x through layernorm; dim 1 split over tp: partial statistics (32 bytes per rank) cost less than gathering it (128)
# CHECK-NEXT: %p = auto(dp, tp)  # forward from %x through softmax; dim 1 split over tp: partial statistics (32 bytes per rank) cost less than gathering it (128)
# CHECK-NEXT: %r = auto(dp, tp)  # forward from %x through rmsnorm; dim 1 split over tp: partial statistics (16 bytes per rank) cost less than gathering it (128)
# CHECK-NEXT: # collectives and slices of the partitioned program (per rank)
# CHECK-NEXT: all_reduce over tp (line 11, 16 bytes per rank): %y_mean (dp, _) partial(tp) -> (dp, _) for layernorm (the row sum (the mean) over the split dim; the dim split, statistics all-reduced: 32 bytes per rank against 192 for gathering it)
# CHECK-NEXT: all_reduce over tp (line 11, 16 bytes per rank): %y_sumsq (dp, _) partial(tp) -> (dp, _) for layernorm (the row sum of squares (the variance) over the split dim; the dim split, statistics all-reduced: 32 bytes per rank against 192 for gathering it)
# CHECK-NEXT: all_reduce over tp (line 12, 16 bytes per rank): max of %p_max (dp, _) partial(tp) -> (dp, _) for softmax (the row max over the split dim; the dim split, statistics all-reduced: 32 bytes per rank against 128 for gathering it)
# CHECK-NEXT: all_reduce over tp (line 12, 16 bytes per rank): %p_sum (dp, _) partial(tp) -> (dp, _) for softmax (the row sum of exp over the split dim; the dim split, statistics all-reduced: 32 bytes per rank against 128 for gathering it)
# CHECK-NEXT: all_reduce over tp (line 13, 16 bytes per rank): %r_sumsq (dp, _) partial(tp) -> (dp, _) for rmsnorm (the row sum of squares (the variance) over the split dim; the dim split, statistics all-reduced: 16 bytes per rank against 160 for gathering it)
