# A param lives on the stage that makes its gradient; another stage that
# reads it receives its value before anything else runs, every step.
# Linear layers under a mean loss: the gradient reaching stage 0 is made
# from the params of stage 1 alone (the loss's gradient, the same in every
# row, through layers 3 and 2), so stage 0 receives them; stage 1 holds,
# sends and updates them.
# RUN: %shardc %s --mesh 2 --emit stage-ir | FileCheck %s
# A param read by forward operations on two stages is shared by them (a
# tied param, LANGUAGE.md §12): here its gradient through the later read
# is a per-step value stage 0 makes, so stage 0 holds and updates it and
# sends it to stage 1 at the step's start.
# RUN: sed 's/^#TIED //' %s > %t-tied.sh
# RUN: %shardc %t-tied.sh --mesh 2 --emit stage-ir | FileCheck %s --check-prefix=TIED
# A value made before the repeat and read after it is made again on the
# last stage, which receives its param w0 from stage 0, where w0's
# gradient is made and w0 is updated.
# RUN: sed 's/^#EARLY //' %s > %t-early.sh
# RUN: %shardc %t-early.sh --mesh 2 --emit stage-ir | FileCheck %s --check-prefix=EARLY
mesh pp
input x : f32[8, 4]
param g : f32[4] = normal(0.5)
#TIED x = x + g
#EARLY param w0 : f32[4, 4] = normal(0.5)
#EARLY e = tanh(x @ w0)
#EARLY x = e
block layer(h : f32[8, 4]) -> f32[8, 4] {
    param w : f32[4, 4] = normal(0.5)
    return h @ w
}
repeat 4 as layers over pp { x = layer(x) }
#TIED x = x + g
#EARLY x = x * e
loss = mean(mean(x, axis = -1), axis = 0)
train loss with sgd(lr = 0.1)
pipeline microbatches 2 schedule gpipe

# CHECK-LABEL: // ---- stage 0 of 2 ----
# CHECK-NEXT: mesh pp = 2
# CHECK-NEXT: partitioned
# CHECK-NEXT: pipeline
# CHECK-NEXT: %layers.2.layer.w = recv {peer = 1, tag = [[T2:[0-9]+]]} : f32[4, 4] auto(_, _) rep 2
# CHECK-NEXT: %layers.3.layer.w = recv {peer = 1, tag = [[T3:[0-9]+]]} : f32[4, 4] auto(_, _) rep 3
# CHECK-NOT: param {name = "layers.2
# CHECK-NOT: param {name = "layers.3
# CHECK: matmul %{{[0-9]+}}, %layers.2.layer.w {trans = b}
# CHECK-NOT: update %layers.2
# CHECK: update %layers.0.layer.w
# CHECK-NEXT: update %layers.1.layer.w
# CHECK-NOT: update
# CHECK-LABEL: // ---- stage 1 of 2 ----
# CHECK-NEXT: mesh pp = 2
# CHECK-NEXT: partitioned
# CHECK-NEXT: pipeline
# CHECK-NEXT: %layers.2.layer.w = param {name = "layers.2.layer.w"
# CHECK-NEXT: %layers.3.layer.w = param {name = "layers.3.layer.w"
# CHECK-NEXT: send %layers.2.layer.w {peer = 0, tag = [[T2]]} rep 2
# CHECK-NEXT: send %layers.3.layer.w {peer = 0, tag = [[T3]]} rep 3
# CHECK: update %layers.2.layer.w
# CHECK-NEXT: update %layers.3.layer.w

# TIED-LABEL: // ---- stage 0 of 2 ----
# TIED: %g = param {name = "g"
# TIED-NEXT: send %g {peer = 1, tag = [[G:[0-9]+]]}
# TIED: update %g =
# TIED-LABEL: // ---- stage 1 of 2 ----
# TIED: %g = recv {peer = 0, tag = [[G]]}
# TIED-NOT: update %g
# EARLY-LABEL: // ---- stage 0 of 2 ----
# EARLY: %w0 = param {name = "w0"
# EARLY-NEXT: send %w0 {peer = 1, tag = [[T:[0-9]+]]}
# EARLY: update %w0 =
# EARLY-LABEL: // ---- stage 1 of 2 ----
# EARLY: %w0 = recv {peer = 0, tag = [[T]]} : f32[4, 4]
# EARLY: matmul %x.2, %w0
# EARLY-NOT: update %w0
