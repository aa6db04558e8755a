# RUN: %expect 1 %shardc %s --mesh 2 --emit ir 2>&1 | FileCheck %s
# In a pipeline each microbatch holds part of the batch dim: slicing it
# is refused where the slice is made.
mesh pp
input x : f32[8, 4]
block f(x : f32[8, 4]) -> f32[8, 4] {
    param w : f32[4, 4]
    h = x @ w
    return concat([h[4:], h[:4]], axis = 0)
}
repeat 2 as l over pp {
    x = f(x)
}
output x
pipeline microbatches 2 schedule gpipe
# CHECK: {{^}}{{.*}}slice-batch-pipeline.sh:9:22: error: cannot pipeline '[:]': it slices the batch dimension, which each microbatch holds a part of{{$}}
