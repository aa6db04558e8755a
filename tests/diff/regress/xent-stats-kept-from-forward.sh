# diff: a vocabulary-split cross_entropy's gradient reads the forward's all-reduced row max and sum of exp instead of reducing them again, also per microbatch in a pipeline, with bf16 logits, and under adamw
# diff-mesh: 2x2x1
# diff-mesh: 1x4x2
# diff-ids: labels 32
# diff-ref: unpipelined
mesh dp, tp, pp
input x : f32[4, 8, 16] shard(dp, _, _)
input labels : i32[4, 8] shard(dp, _)
input x2 : f32[4, 8, 16] shard(dp, _, _)
input lab2 : i32[4, 8] shard(dp, _)
param w : f32[16, 16] = normal(0.3)
param wlm : f32[16, 32] shard(_, tp) = normal(0.3)
param wlm2 : bf16[16, 32] shard(_, tp) = normal(0.3)
block layer(h : f32[4, 8, 16]) -> f32[4, 8, 16] {
    param u : f32[16, 16] = normal(0.3)
    return h + tanh(h @ u)
}
h = tanh(x @ w)
repeat 2 as layers over pp { h = layer(h) }
logits = h @ wlm
l2 = cast(x2, bf16) @ wlm2
loss = cross_entropy(logits, labels) + cross_entropy(cast(l2, f32), lab2)
output loss
pipeline microbatches 2 schedule 1f1b
train loss with adamw(lr = 0.01, eps = 1e-3)
