# Partial sums move only what their readers keep: a slice of an
# all_reduce's sum that nothing else reads (passes/narrow.c) is, over
# axes the sum is not over, the sum of the slice, and over the sum's own
# axes (after others, maybe), a reduce_scatter of the operand (sliced
# over those others first); and two partial sums that are added, one of
# them transposed (and sliced over its own axes) after its sum, are added
# first and summed once (passes/combine.c, run again after narrowing).
# tests/diff/regress/narrow-sums.sh: tied embeddings on 2x2, emb's rows
# split over tp, wte whole.
#
# Data and tensor parallelism: wte's gradient, the head's x^T dy
# transposed plus the embedding's, partial over dp, is added before its
# sum, then summed with the other gradients in their bucket; emb's is
# the embedding's sliced to the rank's rows over tp (16 of 32) before
# any sum, plus the head's, transposed. Neither table's gradient has an
# all_reduce of its own.
# RUN: %shardc %S/../../diff/regress/narrow-sums.sh --mesh 2x2 --emit sharded-ir | FileCheck %s --check-prefix=DP
# DP:      %[[H:[0-9]+]] = matmul %{{[0-9]+}}, %{{[0-9]+}} {trans = a} : f32[16, 32] auto(_, _) partial(dp) phase backward
# DP-NOT:  all_reduce %[[H]]
# DP:      %[[E:[0-9]+]] = embedding_grad %tokens, %{{[0-9]+}} {shape = [32, 16]} : f32[32, 16] auto(_, _) partial(dp) phase backward
# DP-NEXT: %[[T:[0-9]+]] = transpose %[[H]] {perm = [1, 0]} : f32[32, 16] auto(_, _) partial(dp) phase backward
# DP-NEXT: %[[W:[0-9]+]] = add %[[T]], %[[E]] : f32[32, 16] auto(_, _) partial(dp) phase backward
# DP-NEXT: insert %{{[0-9]+}}, %[[W]]
# DP-NEXT: %[[E2:[0-9]+]] = embedding_grad %tokens
# DP-NEXT: %[[S:[0-9]+]] = slice %[[E2]] {dim = 0, axes = [tp]} : f32[16, 16] auto(tp, _) partial(dp) phase backward
# DP-NEXT: %[[T2:[0-9]+]] = transpose %{{[0-9]+}} {perm = [1, 0]} : f32[16, 16] auto(tp, _) partial(dp) phase backward
# DP-NEXT: %[[M:[0-9]+]] = add %[[T2]], %[[S]] : f32[16, 16] auto(tp, _) partial(dp) phase backward
# DP-NEXT: %[[B:[0-9]+]] = insert %{{[0-9]+}}, %[[M]]
# DP-NEXT: all_reduce %[[B]] {axes = [dp]} : f32[1, 1024] auto(_, _) phase backward
# DP-NOT:  all_reduce
#
# ZeRO 1: the same adds, then one reduce_scatter over dp of the bucket;
# no all_reduce in the backward.
# RUN: %shardc %S/../../diff/regress/narrow-sums.sh --mesh 2x2 --zero 1 --emit sharded-ir | FileCheck %s --check-prefix=ZERO
# ZERO:      add %{{[0-9]+}}, %{{[0-9]+}} : f32[32, 16] auto(_, _) partial(dp) phase backward
# ZERO:      %[[S1:[0-9]+]] = slice %{{[0-9]+}} {dim = 0, axes = [tp]} : f32[16, 16] auto(tp, _) partial(dp) phase backward
# ZERO-NEXT: transpose %{{[0-9]+}} {perm = [1, 0]} : f32[16, 16] auto(tp, _) partial(dp) phase backward
# ZERO-NEXT: add %{{[0-9]+}}, %[[S1]] : f32[16, 16] auto(tp, _) partial(dp) phase backward
# ZERO-NEXT: %[[B1:[0-9]+]] = insert
# ZERO-NEXT: reduce_scatter %[[B1]] {dim = 0, axes = [dp]} : f32[1, 512] auto(dp, _) phase backward
# ZERO-NOT:  all_reduce {{.*}}phase backward
#
# On 4x1, tp of size 1: wte's gradient as on 2x2; emb's two reach their
# add through constrains to (tp, _), which change nothing on a rank: the
# same one sum, the constrain after it.
# RUN: %shardc %S/../../diff/regress/narrow-sums.sh --mesh 4x1 --emit sharded-ir | FileCheck %s --check-prefix=ONE
# ONE:      embedding_grad %tokens
# ONE:      %[[OE:[0-9]+]] = embedding_grad %tokens
# ONE-NEXT: %[[OT:[0-9]+]] = transpose %{{[0-9]+}} {perm = [1, 0]} : f32[32, 16] auto(_, _) partial(dp) phase backward
# ONE-NEXT: %[[OA:[0-9]+]] = add %[[OT]], %[[OE]] : f32[32, 16] auto(_, _) partial(dp) phase backward
# ONE-NEXT: %[[OR:[0-9]+]] = all_reduce %[[OA]] {axes = [dp]} : f32[32, 16] auto(_, _) phase backward
# ONE-NEXT: constrain %[[OR]] : f32[32, 16] auto(tp, _) phase backward
# ONE-NOT:  all_reduce {{.*}}phase backward
#
# The bytes a rank sends a step (the report). GPT-2 small (gpt2.sh,
# tied, 124,475,904 params) on 8 ranks of dp: 2 x 7/8 of its f32
# params and the loss scalar, 871,331,335, the closed form (1,141,765,639
# when the table's two gradients were summed apart). examples/llama.sh,
# its table split over tp: on 2x2, 16,563,208 to 15,514,632; on 4x1 with
# ZeRO 1, 20,559,372 to 18,200,076, and without, 19,772,934 to
# 18,200,070.
# RUN: %shardc %S/../../../examples/gpt2.sh -D B=8 -D S=1024 -D P=1024 -D D=768 -D NH=12 -D V=50304 -D L=12 --mesh 8x1 --report | FileCheck %s --check-prefix=GPT2
# GPT2: bytes sent per rank:  871331335
# RUN: %shardc %S/../../../examples/llama.sh --mesh 2x2 --report | FileCheck %s --check-prefix=LLAMA
# LLAMA: bytes sent per rank:  15514632
# RUN: %shardc %S/../../../examples/llama.sh --mesh 4x1 --zero 1 --report | FileCheck %s --check-prefix=LLAMAZ
# LLAMAZ: bytes sent per rank:  18200076
# RUN: %shardc %S/../../../examples/llama.sh --mesh 4x1 --report | FileCheck %s --check-prefix=LLAMA41
# LLAMA41: bytes sent per rank:  18200070
#
# A sum narrowed as another op's operand is issued where the whole sum
# was, not where that op reads it (tests/diff/regress/narrow-sum-early.sh
# on 2x2x1): q = tanh(v3) @ w3, summed over sp, is read sliced over b
# by the attention after k's and v's products; the sum of the rank's
# rows, its tanh and product narrowed with it, still comes before them.
# RUN: %shardc %S/../../diff/regress/narrow-sum-early.sh --mesh 2x2x1 --emit sharded-ir | FileCheck %s --check-prefix=EARLY
# EARLY:      %[[ES:[0-9]+]] = slice %v3 {dim = 0, axes = [b]} : f32[2, 2] auto(b, sp)
# EARLY-NEXT: %[[ET:[0-9]+]] = tanh %[[ES]] : f32[2, 2] auto(b, sp)
# EARLY-NEXT: %[[EP:[0-9]+]] = matmul %[[ET]], %w3 : f32[2, 4] auto(b, _) partial(sp)
# EARLY-NEXT: %[[EQ:[0-9]+]] = all_reduce %[[EP]] {axes = [sp]} : f32[2, 4] auto(b, _)
# EARLY-NEXT: tanh %v3
# EARLY-NEXT: matmul %{{[0-9]+}}, %w4
# EARLY:      matmul %[[EQ]], %{{[0-9]+}} {trans = b} : f32[2, 4] auto(b, _)
