# Attention with its queries split along the sequence (context
# parallelism): each rank holds a block of the query rows, the keys and
# values are gathered. Its backward is attn_dq, attn_dk and attn_dv
# (passes/attn_grad.c), not autodiff's [S, T] probabilities, in the forms
# the partitioner gives it here:
# - v^T, for gp = dy @ v^T, comes as the gather of v's transposed shard;
#   the backward gathers v itself (along S: the dim the transpose had
#   moved to the end), just before the statistics;
# - dk, a sum over the local query rows, is partial and summed over tp
#   before autodiff's scale 1 / sqrt(d): attn_dk (which scales) takes the
#   matmul's place, partial, and the sum reads it; no mul is left, so the
#   all_reduce, of which wk's gradient reads this rank's rows alone,
#   becomes a reduce_scatter (combine.c, after attn_grad.c), as dv's is;
# - the backward gathers k again rather than keep the forward's: the
#   same gather of the same shard, so the statistics still come from the
#   forward (attn_lse beside it, reading the forward's k).
# The program is tests/diff/regress/attention-context-parallel.sh, which
# diffcheck runs on 1x4, 2x2 and 4x1 (every output and param).
# RUN: %shardc %S/../../diff/regress/attention-context-parallel.sh --mesh 1x4 --emit sharded-ir | FileCheck %s
# RUN: %shardc %S/../../diff/regress/attention-context-parallel.sh --mesh 2x2 --emit sharded-ir | FileCheck %s --check-prefix=NOPROBS
# CHECK-NOT:  attn_probs
# CHECK:      %[[Q:[0-9]+]] = matmul %x, %wq : f32[4, 2, 4, 8] auto(dp, _, tp, _)
# CHECK-NEXT: %[[KS:[0-9]+]] = matmul %x, %wk : f32[4, 2, 4, 8] auto(dp, _, tp, _)
# CHECK-NEXT: %[[VS:[0-9]+]] = matmul %x, %wv : f32[4, 2, 4, 8] auto(dp, _, tp, _)
# CHECK-NEXT: %[[K:[0-9]+]] = all_gather %[[KS]] {dim = 2, axes = [tp]} : f32[4, 2, 16, 8] auto(dp, _, _, _)
# CHECK:      %y = attention %[[Q]], %[[K]], %{{[0-9]+}}, %[[P:[0-9]+]] {causal = true}
# CHECK-NEXT: %[[L:[0-9]+]] = attn_lse %[[Q]], %[[K]], %[[P]] {causal = true} : f32[4, 2, 4] auto(dp, _, tp)
# CHECK:      %[[BK:[0-9]+]] = all_gather %[[KS]] {dim = 2, axes = [tp]} : f32[4, 2, 16, 8] auto(dp, _, _, _) phase backward
# CHECK:      %[[BV:[0-9]+]] = all_gather %[[VS]] {dim = 2, axes = [tp]} : f32[4, 2, 16, 8] auto(dp, _, _, _) phase backward
# CHECK-NEXT: %[[ST:[0-9]+]] = attn_delta %y, %[[DY:[0-9]+]], %[[L]] : f32[4, 2, 4, 2] auto(dp, _, tp, _) phase backward
# CHECK-NEXT: %[[DV:[0-9]+]] = attn_dv %[[Q]], %[[BK]], %[[DY]], %[[ST]], %[[BP:[0-9]+]] {causal = true} : f32[4, 2, 16, 8] auto(dp, _, _, _) partial(tp) phase backward
# CHECK-NEXT: %{{[0-9]+}} = attn_dq %[[Q]], %[[BK]], %[[BV]], %[[DY]], %[[ST]], %[[BP]] {causal = true} : f32[4, 2, 4, 8] auto(dp, _, tp, _) phase backward
# CHECK-NEXT: %[[DK:[0-9]+]] = attn_dk %[[Q]], %[[BK]], %[[BV]], %[[DY]], %[[ST]], %[[BP]] {causal = true} : f32[4, 2, 16, 8] auto(dp, _, _, _) partial(tp) phase backward
# CHECK-NEXT: %{{[0-9]+}} = reduce_scatter %[[DV]] {dim = 2, axes = [tp]} : f32[4, 2, 4, 8] auto(dp, _, tp, _) phase backward
# CHECK:      %{{[0-9]+}} = reduce_scatter %[[DK]] {dim = 2, axes = [tp]} : f32[4, 2, 4, 8] auto(dp, _, tp, _) phase backward
# CHECK-NOT:  all_reduce {{.*}} : f32[4, 2, 16, 8]
# CHECK-NOT:  attn_probs
# CHECK-NOT:  transpose
# NOPROBS-NOT: attn_probs
# NOPROBS:     attn_lse
# NOPROBS:     attn_delta
# NOPROBS-NOT: attn_probs
#
# The same program on 1x4 and 1x1 trains alike: the losses of 4 steps
# agree to 1e-5.
# RUN: %shardc %S/../../diff/regress/attention-context-parallel.sh --mesh 1x1 --arch none -o %t.1.plan
# RUN: %shardc %S/../../diff/regress/attention-context-parallel.sh --mesh 1x4 --arch none -o %t.4.plan
# RUN: %shardrun %t.1.plan --steps 4 > %t.1.txt
# RUN: %shardrun %t.4.plan --steps 4 > %t.4.txt
# RUN: python3 -c "import sys,re; l=[[float(x) for x in re.findall(r'step \d+/\d+  loss (\S+)', open(p).read())] for p in sys.argv[1:]]; print(len(l[0]), 'steps', 'agree' if len(l[0]) == 4 and len(l[1]) == 4 and all(abs(a-b) <= 1e-5*abs(b) for a,b in zip(*l)) else 'differ ' + str(l))" %t.1.txt %t.4.txt | FileCheck %s --check-prefix=SAME
# SAME: 4 steps agree
#
# The keys' and values' heads sliced as the queries' are split (a value
# made whole, read by attention through a slice of its heads): the
# backward's v^T is the slice of v's transpose, so it slices v, and the
# statistics come from the forward (the backward's slice of k is the
# forward's, made again).
# RUN: %shardc %S/../../diff/regress/attention-kv-heads-sliced.sh --mesh 2x1 --emit sharded-ir | FileCheck %s --check-prefix=SLICE
# SLICE:      %[[KS:[0-9]+]] = slice %[[KW:[0-9]+]] {dim = 1, axes = [dp]} : f32[4, 1, 8, 16] auto(_, dp, _, _)
# SLICE:      %y = attention %[[Q:[0-9]+]], %[[KS]], %{{[0-9]+}} {causal = false}
# SLICE-NEXT: attn_lse %[[Q]], %[[KS]] {causal = false}
# SLICE:      %[[BV:[0-9]+]] = slice %kv {dim = 1, axes = [dp]} : f32[4, 1, 8, 16] auto(_, dp, _, _) phase backward
# SLICE-NEXT: %[[ST:[0-9]+]] = attn_delta %y,
# SLICE:      attn_dq %[[Q]], %{{[0-9]+}}, %[[BV]], %{{[0-9]+}}, %[[ST]] {causal = false}
# SLICE-NOT:  attn_probs
#
# llama.sh on 1x4: more query heads (8) than key and value heads (2), so
# the keys and values repeated to 8 heads are sliced over tp: every
# layer's backward is attn_dq, attn_dk and attn_dv with the forward's
# statistics.
# RUN: %shardc %S/../../../examples/llama.sh --mesh 1x4 --emit sharded-ir | FileCheck %s --check-prefix=LLAMA
# LLAMA-NOT:     attn_probs
# LLAMA-COUNT-4: attn_lse
# LLAMA-NOT:     attn_probs
#
# Ulysses' sequence parallelism: x split along the sequence, the
# attention's result along the heads, so the forward turns q, k and v
# from split sequence to split heads (all-to-all). Autodiff's recomputed
# probabilities follow the forward attention's rows (propagate.c), not
# q's: the backward turns q, k and v likewise, where it had computed the
# [S, T] probabilities on the split sequence and turned them (all-to-all
# of S x T). v^T comes as the all-to-all of v's transpose, so v is the
# all-to-all of v; the same all-to-alls as the forward's, so the
# statistics come from it.
# RUN: %shardc %S/../../diff/regress/attention-ulysses.sh --mesh 1x4 --emit sharded-ir | FileCheck %s --check-prefix=ULYSSES
# RUN: %shardc %S/../../diff/regress/attention-ulysses.sh --mesh 1x4 --explain-sharding | FileCheck %s --check-prefix=ULYSSES-WHY
# ULYSSES:      %[[Q:[0-9]+]] = all_to_all %[[QS:[0-9]+]] {dim = 1, dim2 = 2, axes = [tp]} : f32[4, 1, 32, 16] auto(dp, tp, _, _)
# ULYSSES-NEXT: %[[K:[0-9]+]] = all_to_all %[[KS:[0-9]+]] {dim = 1, dim2 = 2, axes = [tp]}
# ULYSSES-NEXT: %[[V:[0-9]+]] = all_to_all %[[VS:[0-9]+]] {dim = 1, dim2 = 2, axes = [tp]}
# ULYSSES-NEXT: %y = attention %[[Q]], %[[K]], %[[V]] {causal = true} : f32[4, 1, 32, 16] shard(dp, tp, _, _)
# ULYSSES-NEXT: %[[L:[0-9]+]] = attn_lse %[[Q]], %[[K]] {causal = true}
# ULYSSES:      %[[BQ:[0-9]+]] = all_to_all %[[QS]] {dim = 1, dim2 = 2, axes = [tp]} : f32[4, 1, 32, 16] auto(dp, tp, _, _) phase backward
# ULYSSES-NEXT: %[[BK:[0-9]+]] = all_to_all %[[KS]] {dim = 1, dim2 = 2, axes = [tp]} : f32[4, 1, 32, 16] auto(dp, tp, _, _) phase backward
# ULYSSES-NEXT: %[[BV:[0-9]+]] = all_to_all %[[VS]] {dim = 1, dim2 = 2, axes = [tp]} : f32[4, 1, 32, 16] auto(dp, tp, _, _) phase backward
# ULYSSES-NEXT: %[[ST:[0-9]+]] = attn_delta %y, %[[DY:[0-9]+]], %[[L]] : f32[4, 1, 32, 2] auto(dp, tp, _, _) phase backward
# ULYSSES-NEXT: attn_dv %[[BQ]], %[[BK]], %[[DY]], %[[ST]] {causal = true} : f32[4, 1, 32, 16] auto(dp, tp, _, _) phase backward
# ULYSSES-NEXT: attn_dq %[[BQ]], %[[BK]], %[[BV]], %[[DY]], %[[ST]] {causal = true}
# ULYSSES-NEXT: attn_dk %[[BQ]], %[[BK]], %[[BV]], %[[DY]], %[[ST]] {causal = true}
# ULYSSES-NOT:  attn_probs
# ULYSSES-NOT:  : f32[4, {{[0-9]+}}, {{[0-9]+}}, 32] auto
# ULYSSES-WHY:  through attn_probs; as the forward attention %y's rows
