# diff: causal attention with heads, queries split along S and keys split along a longer T aligned the mask to the end by the local S and T
# diff-mesh: 2x1
# diff-mesh: 2x2
mesh a, b
input q  : f32[2, 2, 4, 4] shard(_, b, a, _)
input kv : f32[2, 2, 8, 4] shard(_, _, a, _)
o = attention(q, kv, kv, causal = true)
output o
