# diff: an output may bear an input's or a param's name (LANGUAGE.md §12:
# separate namespaces); `output x, w, y` failed with "duplicate I/O name"
# diff-mesh: 2x1
# diff-mesh: 1x2
# diff-mesh: 2x2
mesh dp, tp
input x : f32[8, 4] shard(dp, _)
input y : f32[8, 4] shard(_, tp)
param w : f32[4, 4] shard(_, tp) = normal(0.5)
x = relu(x @ w)
output x, w, y
