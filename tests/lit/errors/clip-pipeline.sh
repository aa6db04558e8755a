# RUN: %expect 1 %shardc %s --mesh 2 -o %t.plan 2>&1 | FileCheck %s
# RUN: test ! -e %t.plan
# clip's global norm would need every stage's gradients: refused for now.
mesh pp
input x : f32[8, 4]
block f(x : f32[8, 4]) -> f32[8, 4] {
    param w : f32[4, 4] = normal(0.1)
    return tanh(x @ w)
}
repeat 2 as layers over pp {
    x = f(x)
}
loss = mean(x)
pipeline microbatches 2 schedule 1f1b
train loss with sgd(lr = 0.1, clip = 1.0)
# CHECK: {{^}}{{.*}}clip-pipeline.sh:15:17: error: clip is not supported in a pipeline yet: the global norm needs every stage's gradients{{$}}
