# Each rank computes only the part of a value it keeps (passes/narrow.c):
# a slice of a value nothing else reads becomes the value's op on slices
# of its operands, where slicing commutes with that op, and a slice the
# program makes again of the same value reads the first.
#
# Grouped-query attention with more ranks than key/value heads
# (examples/llama.sh on 1x4: 2 key/value heads, wk and wv split over tp by
# columns, half a head each): attention reads the heads whole, so dk and
# dv are whole on every rank, and the weights' gradients x^T dk and x^T
# dv were computed with every column, then sliced to the rank's 16 of
# 64. Now each is the product of x with the slice of dk (or dv) that the
# input gradient's matmul reads already: a quarter of the FLOPs, and one
# product over the 1024 rows of the batch folded together
# (passes/combine.c's batch rule, run again after the narrowing).
# RUN: %shardc %S/../../../examples/llama.sh --mesh 1x4 -D L=1 --emit sharded-ir | FileCheck %s --check-prefix=GQA
# GQA:      %[[DV:[0-9]+]] = slice %{{[0-9]+}} {dim = 2, axes = [tp]} : f32[8, 128, 16] auto(dp, _, tp) phase backward
# GQA-NEXT: matmul %[[DV]], %layers.0.attn.wv {trans = b} : f32[8, 128, 256] auto(dp, _, _) partial(tp) phase backward
# GQA-NEXT: %[[H:[0-9]+]] = reshape %layers.0.attn.h {shape = [1024, 256]} : f32[1024, 256] auto(dp, _) phase backward
# GQA-NEXT: %[[DV2:[0-9]+]] = reshape %[[DV]] {shape = [1024, 16]} : f32[1024, 16] auto(dp, tp) phase backward
# GQA-NEXT: matmul %[[H]], %[[DV2]] {trans = a} : f32[256, 16] auto(_, tp) partial(dp) phase backward
# GQA:      %[[DK:[0-9]+]] = slice %{{[0-9]+}} {dim = 2, axes = [tp]} : f32[8, 128, 16] auto(dp, _, tp) phase backward
# GQA-NEXT: matmul %[[DK]], %layers.0.attn.wk {trans = b}
# GQA:      %[[DK2:[0-9]+]] = reshape %[[DK]] {shape = [1024, 16]} : f32[1024, 16] auto(dp, tp) phase backward
# GQA-NEXT: matmul %[[H]], %[[DK2]] {trans = a} : f32[256, 16] auto(_, tp) partial(dp) phase backward
# GQA-NOT:  f32[8, 256, 64]
#
# The forward (tests/diff/regress/narrow-slices.sh, a generated program,
# on 3x1): a layernorm of v2 gathered whole, then its product with w4
# sliced along the batch for v3, and another's product with w7 along the
# sequence for v4. v3's norm and product are computed on the rank's 4
# rows of 12; v4's product on its rows of the norm (the norm stays whole:
# the backward reads it).
# RUN: %shardc %S/../../diff/regress/narrow-slices.sh --mesh 3x1 --emit sharded-ir | FileCheck %s --check-prefix=FWD
# FWD:      %[[G:[0-9]+]] = all_gather %v2 {dim = 1, axes = [c]} : f32[12, 12, 6] auto(_, _, _)
# FWD:      %[[S:[0-9]+]] = slice %[[G]] {dim = 0, axes = [c]} : f32[4, 12, 6] auto(c, _, _)
# FWD-NEXT: %[[N:[0-9]+]] = layernorm %[[S]], %{{[0-9]+}}, %{{[0-9]+}} {eps = 0.01} : f32[4, 12, 6] auto(c, _, _)
# FWD-NEXT: %[[P:[0-9]+]] = matmul %[[N]], %w4 : f32[4, 12, 6] auto(c, _, _)
# FWD:      %v3 = add %{{[0-9]+}}, %[[P]]
# FWD:      %[[N7:[0-9]+]] = layernorm %[[G]], %g5, %g6 {eps = 0.01} : f32[12, 12, 6] auto(_, _, _)
# FWD-NEXT: %[[S7:[0-9]+]] = slice %[[N7]] {dim = 1, axes = [c]} : f32[12, 4, 6] auto(_, c, _)
# FWD-NEXT: %[[P7:[0-9]+]] = matmul %[[S7]], %w7 : f32[12, 4, 6] auto(_, c, _)
# FWD-NEXT: %v4 = add %v2, %[[P7]]
#
# Attention along the batch (tests/diff/regress/narrow-attention.sh on
# 2x2x1): q, k and v whole over a, the result then split along the batch
# over a; the attention runs on the rank's 4 sequences of 8, on slices of
# q, k and v, where it ran on all 8 and kept 4.
# RUN: %shardc %S/../../diff/regress/narrow-attention.sh --mesh 2x2x1 --emit sharded-ir | FileCheck %s --check-prefix=ATT
# ATT:      %[[Q:[0-9]+]] = slice %{{[0-9]+}} {dim = 0, axes = [a]} : f32[4, 1, 4, 16] auto(a, tp, _, _)
# ATT-NEXT: %[[K:[0-9]+]] = slice %{{[0-9]+}} {dim = 0, axes = [a]} : f32[4, 1, 4, 16] auto(a, tp, _, _)
# ATT-NEXT: %[[V:[0-9]+]] = slice %{{[0-9]+}} {dim = 0, axes = [a]} : f32[4, 1, 4, 16] auto(a, tp, _, _)
# ATT-NEXT: %[[A:[0-9]+]] = attention %[[Q]], %[[K]], %[[V]] {causal = true} : f32[4, 1, 4, 16] auto(a, tp, _, _)
# ATT-NEXT: %v3 = reshape %[[A]]
# ATT-NOT:  attention {{.*}} : f32[8,
#
# A slice back of what an all_gather gathered (the same dim and axes) is
# the gather's operand: tests/diff/regress/narrow-gather.sh on 3x2x1,
# whose where, narrowed to the rank's part, reads g4 + 0.25 over b's
# part, g4 itself; its gather, read by nothing else, goes (bytes sent a
# step, the stages together, 1744 to 1696).
# RUN: %shardc %S/../../diff/regress/narrow-gather.sh --mesh 3x2x1 --emit sharded-ir | FileCheck %s --check-prefix=GATHER
# GATHER-NOT: all_gather %layers.{{[01]}}.blk5.g4
# GATHER:     add %layers.0.blk5.g4, %{{[0-9]+}} : f32[6] auto(b) rep 0
# GATHER-NOT: all_gather %layers.{{[01]}}.blk5.g4
# GATHER:     add %layers.1.blk5.g4, %{{[0-9]+}} : f32[6] auto(b) rep 1
# GATHER-NOT: all_gather %layers.{{[01]}}.blk5.g4
#
# The report counts the FLOPs saved: llama.sh on 1x8 computes 2.78e9 a
# rank a step, where it computed 3.01e9 (2,777,238,615 until the folded
# products above left out the sums of the batch's products).
# RUN: %shardc %S/../../../examples/llama.sh --mesh 1x8 --arch none --report json | python3 -c "import json, sys; print(json.load(sys.stdin)['stages'][0]['flops'])" | FileCheck %s --check-prefix=FLOPS
# FLOPS: 2777107543
