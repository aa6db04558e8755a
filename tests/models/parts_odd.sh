# f32 matmuls as bf16 parts (shardc --f32-matmul bf16x3) at shapes whose
# split runs do not divide by 4, where the split kernels take an element
# a thread (the others take 4): the forward's x [3, 5] split along its 5
# columns and w [5, 7] along its 5 rows, the weight gradient's x and dh
# along their 3 rows. test_kernel_emulate runs them against the CPU
# backend, and test_cuda_codegen compiles them.
mesh a
input x : f32[3, 5]
input y : f32[3, 7]
param w : f32[5, 7] = normal(0.3)
h = tanh(x @ w)
loss = mse(h, y)
output loss
train loss with sgd(lr = 0.1)
