# diff: repeat counts that do not divide by the stages (LANGUAGE.md §12):
# 5 layers over 2 and 3 stages, trained, against the unpipelined model;
# each stage holds a contiguous run of layers, at least one (on 3 stages
# 0-2, 3 and 4: the output layer and its gradient weigh about 2 layers)
# diff-mesh: 2x2
# diff-mesh: 1x3
# diff-ref: unpipelined
mesh dp, pp
let B = 8, D = 16, V = 32
input ids : i32[B] shard(dp)
input y : i32[B] shard(dp)
param emb : f32[V, D] = normal(0.5)
param head : f32[D, V] = normal(0.3)
block layer(h : f32[B, D]) -> f32[B, D] {
    param w : f32[D, D] = normal(0.3)
    return h + tanh(h @ w)
}
x = embedding(emb, ids)
repeat 5 as layers over pp {
    x = layer(x)
}
loss = cross_entropy(x @ head, y)
output loss
pipeline microbatches 2 schedule 1f1b
train loss with adamw(lr = 0.01)
