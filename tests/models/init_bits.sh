# init_bits.sh: params and inputs of every dtype and initializer, made from
# the seed and output as they are (no step), split over both axes: the
# CUDA backend makes them on the device with the plan's init module, which
# must give the CPU backend's bits (tests/gpu/run.sh); ids, an input that
# indexes c, is made uniform over its rows. Uneven extents, so
# that no block is a whole number of a GPU's thread blocks.
mesh dp, tp

param  a : f32[130, 202]   shard(dp, tp) = normal(0.02)
param  b : bf16[202, 66]   shard(tp, _)  = normal(1.5)
param  c : f16[1000, 77]                 = uniform(-3, 2)
param  d : bf16[300, 7]    shard(dp, _)  = uniform(-0.5, 0.25)
param  e : f32[66]         shard(tp)     = ones
input  x : f32[64, 130]    shard(dp, _)
input  ids : i32[64]       shard(dp)     # uniform over c's rows (pass_input_init)

rows = embedding(c, ids)

output a, b, c, d, e, x, ids, rows
