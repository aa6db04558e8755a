# Microbatch j holds the same global rows of every input, whatever its
# sharding: with dp = 2, x (split over dp) holds one block of 4 rows and
# takes rows 2j, 2j+1 of it; y (replicated) holds both blocks and takes
# those rows of each (one bucket row per block), so the slice or gather
# that meets them with x pairs the same rows. The output r, replicated,
# goes back into both blocks the same way.
# RUN: %shardc %s --mesh 2x1 --emit stage-ir | FileCheck %s
mesh dp, pp
input x : f32[8, 4] shard(dp, _)
input y : f32[8, 4] shard(_, _)
param w : f32[4, 4] = normal(0.1)
h = x
repeat 2 as layers over pp { h = h @ w }
r = h + y shard(_, _)
output r
pipeline microbatches 2 schedule gpipe

# CHECK: %x.1 = reshape %x {shape = [1, 16]}
# CHECK-NEXT: %x.2 = extract %x.1 {shape = [2, 4], offset = 0} : f32[2, 4] shard(dp, _)
# CHECK: %y.1 = reshape %y {shape = [2, 16]}
# CHECK-NEXT: %y.2 = extract %y.1 {shape = [4, 4], offset = 0} : f32[4, 4] shard(_, _)
# CHECK: %x.4 = extract %x.3 {shape = [2, 4], offset = 8}
# CHECK: %y.4 = extract %y.3 {shape = [4, 4], offset = 8}
# CHECK: %[[B:[0-9]+]] = expand {{%[0-9]+}} {shape = [2, 16]}
# CHECK-NEXT: %[[B0:[0-9]+]] = insert %[[B]], %r {offset = 0}
# CHECK-NEXT: %[[B1:[0-9]+]] = insert %[[B0]], %r.1 {offset = 8}
# CHECK-NEXT: %r.2 = reshape %[[B1]] {shape = [8, 4]} : f32[8, 4] shard(_, _)
# CHECK: output "r" = %r.2
