# Attention's backward without the [S, T] probabilities (passes/attn_grad.c):
# autodiff's attn_probs, its [S, T] products, transposes and softmax
# backward become attn_stats (each query row's log-sum-exp and delta), then
# attn_dv, attn_dq and attn_dk, which recompute each score where they need
# it. On 2x2 the heads are split over tp and the batch over dp, and the new
# ops keep the shardings and the phase of what they replace. The model's
# transposes of q, k, v and of the result between [B, S, H, d] and [B, H,
# S, d] are folded into them too (heads_inner, passes/fold.c): each reads
# the reshaped projections as they are.
# RUN: %shardc %S/../../../examples/transformer.sh --mesh 2x2 -D L=1 -D S=16 -D D=32 -D NH=2 -D V=64 -D B=4 --emit sharded-ir | FileCheck %s
# CHECK-NOT: attn_probs
# CHECK:      %[[Q:[0-9]+]] = reshape %{{[0-9]+}} {shape = [2, 16, 1, 16]} : f32[2, 16, 1, 16] auto(dp, _, tp, _)
# CHECK:      attention %[[Q]], %[[K:[0-9]+]], %[[V:[0-9]+]] {causal = true, heads_inner = true} : f32[2, 16, 1, 16] auto(dp, _, tp, _)
# CHECK:      %[[ST:[0-9]+]] = attn_stats %[[Q]], %[[K]], %[[V]], %[[DY:[0-9]+]] {causal = true, heads_inner = true} : f32[2, 1, 16, 2] auto(dp, tp, _, _) phase backward
# CHECK-NEXT: %{{[0-9]+}} = attn_dv %[[Q]], %[[K]], %[[DY]], %[[ST]] {causal = true, heads_inner = true} : f32[2, 16, 1, 16] auto(dp, _, tp, _) phase backward
# CHECK-NEXT: %{{[0-9]+}} = attn_dq %[[Q]], %[[K]], %[[V]], %[[DY]], %[[ST]] {causal = true, heads_inner = true} : f32[2, 16, 1, 16] auto(dp, _, tp, _) phase backward
# CHECK-NEXT: %{{[0-9]+}} = attn_dk %[[Q]], %[[K]], %[[V]], %[[DY]], %[[ST]] {causal = true, heads_inner = true} : f32[2, 16, 1, 16] auto(dp, _, tp, _) phase backward
# CHECK-NOT: attn_probs
#
# bf16: the same ops (the scale's bf16 constant is matched to its rounding).
# RUN: %shardc %S/../../../examples/transformer.sh --mesh 1x2 -D L=1 -D S=16 -D D=32 -D NH=2 -D V=64 -D B=4 --dtype bf16 --emit sharded-ir | FileCheck %s --check-prefix=BF16
# BF16-NOT: attn_probs
# BF16: attn_stats {{.*}} : f32[4, 1, 16, 2]
# BF16: attn_dk {{.*}} : bf16[4, 16, 1, 16]
#
# No value of the backward grows with S times T: GPT-2 small's activations
# at S = 4096 are 4.00 times those at S = 1024 (4.60 with attn_probs).
# RUN: %shardc %S/../../../examples/transformer.sh -D B=8 -D S=1024 -D D=768 -D NH=12 -D V=50304 -D L=12 --mesh 1x1 --report json > %t.1k.json
# RUN: %shardc %S/../../../examples/transformer.sh -D B=8 -D S=4096 -D D=768 -D NH=12 -D V=50304 -D L=12 --mesh 1x1 --report json > %t.4k.json
# RUN: python3 -c "import json,sys; a=[json.load(open(p)) for p in sys.argv[1:]]; act=[x['stages'][0]['memory']['activations'] for x in a]; r=act[1]/act[0]; print('ratio', format(r, '.3f'), 'ok' if r <= 4.05 else 'over 4.05')" %t.1k.json %t.4k.json | FileCheck %s --check-prefix=MEM
# MEM: ratio 4.000 ok
