# Elementwise and broadcasting: the result follows the operand dims that are
# not broadcast; a bias gets its dim backward; two operands splitting the
# same dims differently: a deterministic tie, operand 0 wins, said so.
# RUN: %shardc %s --mesh 2x2 --explain-sharding | FileCheck %s
mesh dp, tp
input  x : f32[8, 16] shard(dp, tp)
input  b : f32[16]
input  c : f32[8, 16] shard(tp, _)
y = x + b
z = x * c
output y, z
# CHECK: # shardings of the logical program
# CHECK-NEXT: %x = shard(dp, tp)  # annotation
# CHECK-NEXT: %b = auto(tp)  # backward from %y through add (operand b)
# CHECK-NEXT: %c = shard(tp, _)  # annotation
# CHECK-NEXT: %y = auto(dp, tp)  # forward from %x through add
# CHECK-NEXT: %z = auto(dp, tp)  # forward from %x and %c through mul; tie: %x has (dp, tp) and %c has (tp, _); took %x (tie broken)
# CHECK-NEXT: # collectives and slices of the partitioned program (per rank)
# CHECK-NEXT: all_to_all over tp (line 10, 128 bytes per rank): %c (tp, _) -> (_, tp) for mul (operands of an elementwise op follow its result; %c has its sharding by: annotation)
# CHECK-NEXT: slice over dp (line 10, 0 bytes per rank): %4 (_, tp) -> (dp, tp) for mul (operands of an elementwise op follow its result; %c has its sharding by: annotation)
