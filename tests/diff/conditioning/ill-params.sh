# diff: an inference program whose one input is i32 ids (diffcheck.py
# moves its params 1 ulp too, saved from a reference run: 1 ulp of its
# inputs alone moves nothing). gen.py seed 2773995, reduced: a bf16 sum
# over an axis split over tp is each rank's partial sum rounded to bf16,
# then the all-reduce's sum rounded again, where the reference rounds
# once, and the layernorm over 4 features that follows magnifies the
# difference to about 1.1 tolerances, while 1 ulp of the params moves the
# reference about 0.6: a mismatch by diffcheck.py's rule (a known one:
# tests/diff/conditioning/run.py).
# diff-mesh: 1x1x1x2
# diff-variant: --f32-matmul bf16x3
# diff-ids: ids 8
mesh sp, ep, a, tp
let B = 8, D = 16, H = 4
input ids : i32[B, B] shard(a, tp)
param w1 : bf16[B, H] = normal(0.354)
ix = max(ids - 2, ids / 2)
v1 = embedding(w1, ix)
v2 = sigmoid(v1)
v3 = sum(v2, axis = -2)
param g3 : bf16[H] = uniform(0.5, 1.5)
param g4 : bf16[H] = normal(0.1)   # a comment
v5 = layernorm(v3,
        g3, g4)
v6 = reshape(v5, [32])
output v6
