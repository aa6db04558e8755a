# Vocabulary-parallel cross_entropy: the lm head is column-parallel, so the
# logits reach the loss split over tp along the classes and stay split
# (the labels checked against all the classes first, check_labels, as the
# unsplit loss checks them, and again for the gradient):
# the row max (all_reduce max), the sum of exp (all_reduce sum) and the
# label's logit, picked on the rank whose classes hold it (an iota over the
# classes sliced at the rank's coordinate, compared with the labels; 0 on
# the other ranks) and all-reduced: three all_reduces over tp of one
# element per local row (2 x 8), then the mean over the dp-split rows as
# before. The gradient, cross_entropy_grad, is the softmax over the split
# classes minus the one-hot at the rank's classes; the softmax reads the
# forward's all-reduced row max and sum of exp of the same logits, so the
# backward communicates nothing over tp (as Megatron keeps them). With 2
# classes (%small), gathering the logits (32 bytes) beats the statistics
# (96 bytes): they are gathered.
# RUN: %shardc %s --mesh 2x2 --bucket-mb 0 --emit sharded-ir | FileCheck %s --check-prefix=IR
# RUN: %shardc %s --mesh 2x2 --bucket-mb 0 --report json | FileCheck %s --check-prefix=JSON
# RUN: %shardc %s --mesh 2x2 --bucket-mb 0 --explain-sharding | FileCheck %s --check-prefix=WHY
# RUN: %shardc %s --mesh 2x2 --bucket-mb 0 --emit sharded-ir | grep 'phase backward' | FileCheck %s --check-prefix=BWD
# BWD-NOT: {{all_reduce|all_gather|all_to_all|reduce_scatter}} {{.*}}axes = [tp]
# BWD:     all_reduce %{{[0-9]+}} {axes = [dp]} : f32[32, 32]
# BWD-NOT: {{all_reduce|all_gather|all_to_all|reduce_scatter}} {{.*}}axes = [tp]
mesh dp, tp
input  x      : f32[4, 8, 32] shard(dp, _, _)
input  labels : i32[4, 8] shard(dp, _)
input  lg2    : f32[8, 2] shard(_, tp)
input  lab2   : i32[8]
param  wlm    : f32[32, 64] shard(_, tp) = normal(0.02)
logits = x @ wlm
loss = cross_entropy(logits, labels)
small = cross_entropy(lg2, lab2)
output loss, small
train loss with sgd(lr = 0.1)
# IR:      %logits = matmul %x, %wlm : f32[2, 8, 32] auto(dp, _, tp)
# IR-NEXT: %[[LAB:[0-9]+]] = check_labels %labels {bound = 64} : i32[2, 8] auto(dp, _)
# IR-NEXT: %loss_max = amax %logits {axis = 2, keepdims = true} : f32[2, 8, 1] auto(dp, _, _) partial(tp)
# IR-NEXT: %[[M:[0-9]+]] = all_reduce %loss_max {axes = [tp], reduce = max} : f32[2, 8, 1] auto(dp, _, _)
# IR-NEXT: %[[Z:[0-9]+]] = sub %logits, %[[M]] : f32[2, 8, 32] auto(dp, _, tp)
# IR-NEXT: %[[E:[0-9]+]] = exp %[[Z]] : f32[2, 8, 32] auto(dp, _, tp)
# IR-NEXT: %loss_sum = sum %[[E]] {axis = 2, keepdims = true} : f32[2, 8, 1] auto(dp, _, _) partial(tp)
# IR-NEXT: %[[S:[0-9]+]] = all_reduce %loss_sum {axes = [tp]} : f32[2, 8, 1] auto(dp, _, _)
# IR-NEXT: %loss_classes = iota {shape = [64]} : i32[64] auto(_)
# IR-NEXT: %[[CLS:[0-9]+]] = slice %loss_classes {dim = 0, axes = [tp]} : i32[32] auto(tp)
# IR-NEXT: %[[L:[0-9]+]] = reshape %[[LAB]] {shape = [2, 8, 1]} : i32[2, 8, 1] auto(dp, _, _)
# IR-NEXT: %[[EQ:[0-9]+]] = eq %[[L]], %[[CLS]] : i32[2, 8, 32] auto(dp, _, tp)
# IR-NEXT: %[[OH:[0-9]+]] = cast %[[EQ]] {dtype = f32} : f32[2, 8, 32] auto(dp, _, tp)
# IR-NEXT: %[[XO:[0-9]+]] = mul %logits, %[[OH]] : f32[2, 8, 32] auto(dp, _, tp)
# IR-NEXT: %loss_label = sum %[[XO]] {axis = 2, keepdims = true} : f32[2, 8, 1] auto(dp, _, _) partial(tp)
# IR-NEXT: %[[P:[0-9]+]] = all_reduce %loss_label {axes = [tp]} : f32[2, 8, 1] auto(dp, _, _)
# IR-NEXT: %[[LS:[0-9]+]] = log %[[S]] : f32[2, 8, 1] auto(dp, _, _)
# IR-NEXT: %[[LSE:[0-9]+]] = add %[[M]], %[[LS]] : f32[2, 8, 1] auto(dp, _, _)
# IR-NEXT: %[[ROW:[0-9]+]] = sub %[[LSE]], %[[P]] : f32[2, 8, 1] auto(dp, _, _)
# IR-NEXT: %[[FLAT:[0-9]+]] = reshape %[[ROW]] {shape = [16]} : f32[16] auto(_) partial(dp)
# IR-NEXT: %[[MEAN:[0-9]+]] = mean %[[FLAT]] {axis = 0, keepdims = false} : f32[] auto() partial(dp)
# IR-NEXT: %[[HALF:[0-9]+]] = const {value = 0.5} : f32[] auto()
# IR-NEXT: %[[SH:[0-9]+]] = mul %[[MEAN]], %[[HALF]] : f32[] auto() partial(dp)
# IR-NEXT: %loss = all_reduce %[[SH]] {axes = [dp]} : f32[] auto()
# IR-NEXT: %[[G2:[0-9]+]] = all_gather %lg2 {dim = 1, axes = [tp]} : f32[8, 2] shard(_, _)
# IR-NEXT: %small = cross_entropy %[[G2]], %lab2 : f32[] auto()
# IR:      check_labels %labels {bound = 64} : i32[2, 8] auto(dp, _) phase backward
# IR-NEXT: %[[BZ:[0-9]+]] = sub %logits, %[[M]] : f32[2, 8, 32] auto(dp, _, tp) phase backward
# IR-NEXT: %[[BE:[0-9]+]] = exp %[[BZ]] : f32[2, 8, 32] auto(dp, _, tp) phase backward
# IR-NEXT: %[[SM:[0-9]+]] = div %[[BE]], %[[S]] : f32[2, 8, 32] auto(dp, _, tp) phase backward
# IR:      %[[BOH:[0-9]+]] = cast %{{[0-9]+}} {dtype = f32} : f32[2, 8, 32] auto(dp, _, tp) phase backward
# IR-NEXT: %{{[0-9]+}} = sub %[[SM]], %[[BOH]] : f32[2, 8, 32] auto(dp, _, tp) phase backward
# IR-NOT:  cross_entropy_grad %
# JSON: "collectives": [{"kind": "all_reduce", "axes": ["tp"], "dtype": "f32", "elements": 16, "reduce": "max", "phase": "forward"}, {"kind": "all_reduce", "axes": ["tp"], "dtype": "f32", "elements": 16, "phase": "forward"}, {"kind": "all_reduce", "axes": ["tp"], "dtype": "f32", "elements": 16, "phase": "forward"}, {"kind": "all_reduce", "axes": ["dp"], "dtype": "f32", "elements": 1, "phase": "forward"}, {"kind": "all_gather", "axes": ["tp"], "dtype": "f32", "elements": 16, "phase": "forward"}, {"kind": "all_reduce", "axes": ["dp"], "dtype": "f32", "elements": 1024, "phase": "backward"}]}]}
# WHY: # collectives and slices of the partitioned program (per rank)
# WHY-NEXT: all_reduce over tp (line 30, 64 bytes per rank): max of %loss_max (dp, _, _) partial(tp) -> (dp, _, _) for cross_entropy (the row max over the split dim; the dim split, statistics all-reduced: 192 bytes per rank against 2048 for gathering it)
# WHY-NEXT: all_reduce over tp (line 30, 64 bytes per rank): %loss_sum (dp, _, _) partial(tp) -> (dp, _, _) for cross_entropy (the row sum of exp over the split dim; the dim split, statistics all-reduced: 192 bytes per rank against 2048 for gathering it)
# WHY-NEXT: slice over tp (line 30, 0 bytes per rank): %loss_classes (_) -> (tp) for cross_entropy (the classes this rank holds)
# WHY-NEXT: all_reduce over tp (line 30, 64 bytes per rank): %loss_label (dp, _, _) partial(tp) -> (dp, _, _) for cross_entropy (the label's logit, from the rank holding its class; the dim split, statistics all-reduced: 192 bytes per rank against 2048 for gathering it)
# WHY-NEXT: all_reduce over dp (line 30, 4 bytes per rank): %loss () partial(dp) -> () for cross_entropy (the result's sharding, by: forward from %logits and %labels through cross_entropy)
# WHY-NEXT: all_gather over tp (line 31, 32 bytes per rank): %lg2 (_, tp) -> (_, _) for cross_entropy (the dim whole: gathering costs 32 bytes per rank, no more than partial statistics; %lg2 has its sharding by: annotation)
