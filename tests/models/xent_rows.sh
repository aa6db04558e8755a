# xent_rows.sh: cross_entropy and its gradient over long bf16 rows. x's
# loss is the forward's last op, so its gradient (times 1 / rows) moves to
# just after it and the loss's kernel computes it in a second pass over
# each row (passes/xent_grad.c, fuse.c's xgrad_fits): GPT-2's vocabulary,
# 50304 classes a row, 512 threads a row taking 12 or 13 16-byte steps,
# 4 loads ahead, in both passes, and R rows over the kernel's blocks. y's
# gradient, 12000 classes a row, keeps a kernel of its own (x's gradient
# comes between), reading the log-sum-exp the loss's kernel stored.
# test_kernel_emulate runs it with R = 4, tests/gpu/run.sh with R = 64
# against the CPU backend.
mesh dp
let R = 64
input lab : i32[R]
input lab2 : i32[R]
param x : bf16[R, 50304] = normal(1.0)
param y : bf16[R, 12000] = normal(1.0)
loss = cross_entropy(y, lab2) + cross_entropy(x, lab)
output loss
train loss with sgd(lr = 0.1)
