# Attention's backward without the [S, T] probabilities (passes/attn_grad.c):
# autodiff's attn_probs, its [S, T] products, transposes and softmax
# backward become attn_dv, attn_dq and attn_dk, which recompute each score
# where they need it, from each query row's statistics (log-sum-exp and
# delta). Where the program holds the forward attention of the same q, k
# and v, the log-sum-exp is attn_lse's, right after it (one kernel with
# the forward on a GPU), and attn_delta makes the statistics from it and
# the forward's result: delta is the dot of y's and dy's rows. On 2x2 the
# heads are split over tp and the batch over dp, and the new ops keep the
# shardings and the phase of what they replace. The model's transposes of
# q, k, v and of the result between [B, S, H, d] and [B, H, S, d] are
# folded into them too (heads_inner, passes/fold.c): each reads the
# reshaped projections as they are, and attn_delta reads the forward's
# result and dy's with the heads inner, as stored.
# RUN: %shardc %S/../../../examples/transformer.sh --mesh 2x2 -D L=1 -D S=16 -D D=32 -D NH=2 -D V=64 -D B=4 --emit sharded-ir | FileCheck %s
# CHECK-NOT: attn_probs
# CHECK-NOT: attn_stats
# CHECK:      %[[Q:[0-9]+]] = reshape %{{[0-9]+}} {shape = [2, 16, 1, 16]} : f32[2, 16, 1, 16] auto(dp, _, tp, _)
# CHECK:      %[[Y:[0-9]+]] = attention %[[Q]], %[[K:[0-9]+]], %[[V:[0-9]+]] {causal = true, heads_inner = true} : f32[2, 16, 1, 16] auto(dp, _, tp, _)
# CHECK-NEXT: %[[L:[0-9]+]] = attn_lse %[[Q]], %[[K]] {causal = true, heads_inner = true} : f32[2, 1, 16] auto(dp, tp, _)
# CHECK:      %[[ST:[0-9]+]] = attn_delta %[[Y]], %[[DY:[0-9]+]], %[[L]] {heads_inner = true} : f32[2, 1, 16, 2] auto(dp, tp, _, _) phase backward
# CHECK-NEXT: %{{[0-9]+}} = attn_dv %[[Q]], %[[K]], %[[DY]], %[[ST]] {causal = true, heads_inner = true} : f32[2, 16, 1, 16] auto(dp, _, tp, _) phase backward
# CHECK-NEXT: %{{[0-9]+}} = attn_dq %[[Q]], %[[K]], %[[V]], %[[DY]], %[[ST]] {causal = true, heads_inner = true} : f32[2, 16, 1, 16] auto(dp, _, tp, _) phase backward
# CHECK-NEXT: %{{[0-9]+}} = attn_dk %[[Q]], %[[K]], %[[V]], %[[DY]], %[[ST]] {causal = true, heads_inner = true} : f32[2, 16, 1, 16] auto(dp, _, tp, _) phase backward
# CHECK-NOT: attn_probs
# CHECK-NOT: attn_stats
#
# Where the backward's q, k and v are not the forward's (a recompute block
# that returns the attention: its result is kept, and the backward
# recomputes q), attn_stats computes both statistics from the scores.
# attn_dv reads its q, k and dy as stored, and writes its result as it
# computes it: an add reads it, not a transpose back.
# RUN: %shardc %S/attention-recompute.model --mesh 2 --emit sharded-ir | FileCheck %s --check-prefix=RECOMPUTE
# RECOMPUTE-NOT: attn_lse
# RECOMPUTE:     %[[ST:[0-9]+]] = attn_stats %[[Q:[0-9]+]], %[[Q]], %[[Q]], %{{[0-9]+}} {causal = true, heads_inner = true} : f32[2, 2, 16, 2] auto(dp, _, _, _) phase backward
# RECOMPUTE:     attn_dv {{.*}}, %[[ST]] {causal = true, heads_inner = [q, k, dy]} : f32[2, 2, 16, 16]
# RECOMPUTE-NOT: attn_delta
#
# bf16: the same ops (the scale's bf16 constant is matched to its rounding).
# RUN: %shardc %S/../../../examples/transformer.sh --mesh 1x2 -D L=1 -D S=16 -D D=32 -D NH=2 -D V=64 -D B=4 --dtype bf16 --emit sharded-ir | FileCheck %s --check-prefix=BF16
# BF16-NOT: attn_probs
# BF16: attn_lse {{.*}} : f32[4, 1, 16]
# BF16: attn_delta {{.*}} : f32[4, 1, 16, 2]
# BF16: attn_dk {{.*}} : bf16[4, 16, 1, 16]
#
# No value of the backward grows with S times T: GPT-2 small's activations
# at S = 4096 are 4.00 times those at S = 1024 (4.60 with attn_probs).
# RUN: %shardc %S/../../../examples/transformer.sh -D B=8 -D S=1024 -D D=768 -D NH=12 -D V=50304 -D L=12 --mesh 1x1 --report json > %t.1k.json
# RUN: %shardc %S/../../../examples/transformer.sh -D B=8 -D S=4096 -D D=768 -D NH=12 -D V=50304 -D L=12 --mesh 1x1 --report json > %t.4k.json
# RUN: python3 -c "import json,sys; a=[json.load(open(p)) for p in sys.argv[1:]]; act=[x['stages'][0]['memory']['activations'] for x in a]; r=act[1]/act[0]; print('ratio', format(r, '.3f'), 'ok' if r <= 4.05 else 'over 4.05')" %t.1k.json %t.4k.json | FileCheck %s --check-prefix=MEM
# MEM: ratio 4.000 ok
