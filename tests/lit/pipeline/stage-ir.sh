# The pipeline split: two layers over pp = 2 stages, each stage's program
# with its microbatches (an input's rows in blocks), sends and recvs, and
# the gradient accumulated over the microbatches before the optimizer.
# RUN: %shardc %s --mesh 1x2 --emit stage-ir | FileCheck %s --check-prefix=GPIPE
# RUN: sed 's/microbatches 2 schedule gpipe/microbatches 4 schedule 1f1b/' %s > %t.sh
# RUN: %shardc %t.sh --mesh 1x2 --emit stage-ir | FileCheck %s --check-prefix=ONEF
mesh dp, pp
input x : f32[8, 16] shard(dp, _)
input y : f32[8, 16] shard(dp, _)
block layer(h : f32[8, 16]) -> f32[8, 16] {
    param w : f32[16, 16] = normal(0.1)
    return relu(h @ w)
}
repeat 2 as layers over pp {
    x = layer(x)
}
loss = mse(x, y)
output loss
pipeline microbatches 2 schedule gpipe
train loss with sgd(lr = 0.1)

# GPipe: stage 0 runs both forwards (rows 0-3, then 4-7 of x), sending each,
# then both backwards; the two gradients of w are added, then sgd.
# GPIPE-LABEL: // ---- stage 0 of 2 ----
# GPIPE: pipeline over pp repeats 2 microbatches 2 schedule gpipe stage 0
# GPIPE: %x = input {name = "x"} : f32[8, 16] shard(dp, _)
# GPIPE: %x.2 = extract %x.1 {shape = [4, 16], offset = 0} : f32[4, 16] shard(dp, _)
# GPIPE: %layers.0.x = relu %0 : f32[4, 16]
# GPIPE-NEXT: send %layers.0.x {peer = 1, tag = [[T0:[0-9]+]]} rep 0
# GPIPE: extract %x.3 {shape = [4, 16], offset = 64}
# GPIPE: send %layers.0.x.1 {peer = 1, tag = [[T1:[0-9]+]]} rep 0
# GPIPE-NEXT: %[[G0:[0-9]+]] = recv {peer = 1, tag = [[B0:[0-9]+]]} : f32[4, 16]
# GPIPE: %[[W0:[0-9]+]] = matmul {{.*}} : f32[16, 16] {{.*}} phase backward
# GPIPE: recv {peer = 1, tag = [[B1:[0-9]+]]} : f32[4, 16]
# GPIPE: %[[W1:[0-9]+]] = matmul {{.*}} : f32[16, 16] {{.*}} phase backward
# GPIPE-NEXT: %[[SUM:[0-9]+]] = add %[[W0]], %[[W1]] : f32[16, 16]
# GPIPE-NEXT: %[[GW:[0-9]+]] = constrain %[[SUM]]
# GPIPE-NEXT: sgd %layers.0.layer.w, %[[GW]]
# GPIPE-NOT: send
# GPIPE-NOT: recv
# GPIPE: update %layers.0.layer.w = {{%[0-9]+}} grad %[[GW]]
# The last stage: both forwards and losses, the mean of the two losses,
# both backwards, then the gradients back to stage 0.
# GPIPE-LABEL: // ---- stage 1 of 2 ----
# GPIPE: %layers.0.x = recv {peer = 0, tag = [[T0]]} : f32[4, 16]
# GPIPE: %[[L0:[0-9]+]] = mse %layers.1.x, %y.2
# GPIPE: recv {peer = 0, tag = [[T1]]}
# GPIPE: %[[L1:[0-9]+]] = mse
# GPIPE-NEXT: %[[LS:[0-9]+]] = add %[[L0]], %[[L1]]
# GPIPE-NEXT: %[[HALF:[0-9]+]] = const {value = 0.5}
# GPIPE-NEXT: mul %[[LS]], %[[HALF]]
# GPIPE: send {{%[0-9]+}} {peer = 0, tag = [[B0]]} rep 1 phase backward
# GPIPE: send {{%[0-9]+}} {peer = 0, tag = [[B1]]} rep 1 phase backward
# GPIPE: output "loss" = %loss
# GPIPE: train %loss

# 1F1B with 4 microbatches: stage 0 runs F0 F1 B0 F2 B1 F3 B2 B3; stage 1
# F0 B0 F1 B1 F2 B2 F3 B3, receiving the next activation before it sends
# the last gradient (the order the two stages meet in).
# ONEF-LABEL: // ---- stage 0 of 2 ----
# ONEF: send {{.*}} tag = [[F0:[0-9]+]]
# ONEF: send {{.*}} tag = [[F1:[0-9]+]]
# ONEF-NEXT: recv {{.*}} tag = [[B0:[0-9]+]]
# ONEF: send {{.*}} tag = [[F2:[0-9]+]]
# ONEF-NEXT: recv {{.*}} tag = [[B1:[0-9]+]]
# ONEF: send {{.*}} tag = [[F3:[0-9]+]]
# ONEF-NEXT: recv {{.*}} tag = [[B2:[0-9]+]]
# ONEF: recv {{.*}} tag = [[B3:[0-9]+]]
# ONEF-LABEL: // ---- stage 1 of 2 ----
# ONEF: recv {peer = 0, tag = [[F0]]}
# ONEF: recv {peer = 0, tag = [[F1]]}
# ONEF-NEXT: send {{.*}} {peer = 0, tag = [[B0]]}
# ONEF: recv {peer = 0, tag = [[F2]]}
# ONEF-NEXT: send {{.*}} {peer = 0, tag = [[B1]]}
# ONEF: recv {peer = 0, tag = [[F3]]}
# ONEF-NEXT: send {{.*}} {peer = 0, tag = [[B2]]}
# ONEF: send {{.*}} {peer = 0, tag = [[B3]]}
