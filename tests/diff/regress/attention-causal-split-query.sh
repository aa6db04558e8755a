# diff: causal attention over queries split along the sequence masked the keys by each rank's local rows instead of the global ones
# diff-mesh: 2x1
# diff-mesh: 2x2
mesh a, b
input q : f32[8, 4] shard((a, b), _)
input k : f32[8, 4]
input v : f32[8, 4]
o = attention(q, k, v, causal = true)
output o
