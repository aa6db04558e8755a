# view_shared.sh: a concat of a split's pieces under a mean loss, whose
# gradient is the mean's [1] expanded over 32 elements in the kernel of
# the pieces' zero pads (passes/fuse.c's find_views): within a vector's
# views computed at once (codegen/cuda_tile.c's view_vectors), every lane
# reads that one element, which is loaded once, not as an aligned vector
# of 4 (which read 3 floats past the [1]'s buffer: seed 2879296 of
# tests/diff/gen.py, found by the emulator). test_kernel_emulate runs each
# kernel against the CPU backend; lit/cuda/view-shared.sh reads the load.
mesh a
input x : f32[32]
param w : f32[32] = normal(0.5)
v = x * w
v6, v7 = split(v, [16, 16], axis = 0)
v8 = concat([v7, v6], axis = 0)
loss = 0.5 * mean(v8, axis = -1)
train loss with sgd(lr = 0.05)
