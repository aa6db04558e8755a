input x : f32[]
y = attention(x, x, x, causal = true)
output y
