# attn_delta's rows a vector a lane (codegen/cuda_ops.c's emit_attn_delta)
# where a warp's rows run past the last: 13 query rows of heads of 16
# bf16 (2 lanes a row, 16 rows a warp), of 8 f32 (2 lanes) over two heads
# and of 4 f32 (a lane a row, 32 rows a warp). test_kernel_emulate runs
# their kernels against the CPU backend.
mesh a
let S = 13
input q : bf16[1, 1, S, 16]
input qf : f32[1, 2, S, 8]
input qn : f32[1, 1, S, 4]
input u : f32[1, 1, S, 16]
input uf : f32[1, 2, S, 8]
input un : f32[1, 1, S, 4]
param w : bf16[16, 16] = normal(0.3)
param wf : f32[8, 8] = normal(0.3)
param wn : f32[4, 4] = normal(0.3)
x = q @ w
xf = qf @ wf
xn = qn @ wn
o = attention(x, x, x, causal = true)
of = attention(xf, xf, xf, causal = true)
on = attention(xn, xn, xn)
loss = mse(cast(o, f32), u) + mse(of, uf) + mse(on, un)
train loss with sgd(lr = 0.1)
