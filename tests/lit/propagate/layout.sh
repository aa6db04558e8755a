# transpose permutes the sharding; reshape keeps a split dim that stays the
# major part of a merged or split dim (heads split over tp), and a split
# of the merged dims' major part survives flattening.
# RUN: %shardc %s --mesh 2x2 --explain-sharding | FileCheck %s
mesh dp, tp
input  x : f32[8, 128, 256] shard(dp, _, tp)
q = reshape(x, [8, 128, 8, 32])
t = transpose(q, [0, 2, 1, 3])
back = reshape(transpose(t, [0, 2, 1, 3]), [8, 128, 256])
flat = reshape(x, [1024, 256])
minor = reshape(x, [8, 128, 16, 16])
output t, back, flat, minor
# CHECK: # shardings of the logical program
# CHECK-NEXT: %x = shard(dp, _, tp)  # annotation
# CHECK-NEXT: %q = auto(dp, _, tp, _)  # forward from %x through reshape
# CHECK-NEXT: %t = auto(dp, tp, _, _)  # forward from %q through transpose
# CHECK-NEXT: %0 = auto(dp, _, tp, _)  # forward from %t through transpose
# CHECK-NEXT: %back = auto(dp, _, tp)  # forward from %0 through reshape
# CHECK-NEXT: %flat = auto(dp, tp)  # forward from %x through reshape
# CHECK-NEXT: %minor = auto(dp, _, tp, _)  # forward from %x through reshape
# CHECK-NEXT: # collectives and slices of the partitioned program (per rank)
