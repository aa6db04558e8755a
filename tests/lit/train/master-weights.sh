# The optimizer phase of a bf16 param: an f32 master "opt.NAME.master" made
# from the param (init param("NAME")), f32 optimizer state, the gradient
# cast to f32 once, the update on the master, and the param's new value the
# new master cast back to bf16; both updates recorded. An f32 param keeps
# today's form: no master, no cast, the update on the param itself.
# RUN: %shardc %s --emit train-ir | FileCheck %s
# RUN: %shardc %s --emit train-ir > %t.ir
# RUN: %shardc %t.ir --emit ir | diff %t.ir -
# RUN: sed 's/^train .*/train loss with sgd(lr = 0.1, momentum = 0.9)/' %s > %t.sh
# RUN: %shardc %t.sh --emit train-ir | FileCheck %s --check-prefix=SGD
# CHECK: %[[STEP:[0-9]+]] = add %{{[0-9]+}}, %{{[0-9]+}} : f32[] {{.*}}phase optimizer
# CHECK: %[[M:[0-9]+]] = state {name = "opt.w.m", init = zeros} : f32[8, 16]
# CHECK: %[[V:[0-9]+]] = state {name = "opt.w.v", init = zeros} : f32[8, 16]
# CHECK: %[[NM:[0-9]+]] = adam_m %[[M]], %[[GW:[0-9]+]]
# CHECK: %[[NV:[0-9]+]] = adam_v %[[V]], %[[GW]]
# CHECK: %[[NW:[0-9]+]] = adamw %w, %[[NM]], %[[NV]], %[[STEP]] {{.*}} : f32[8, 16]
# CHECK: %[[MASTER:[0-9]+]] = state {name = "opt.h.master", init = param("h")} : f32[16, 4] {{.*}}phase optimizer
# CHECK-NEXT: %[[G32:[0-9]+]] = cast %[[GH:[0-9]+]] {dtype = f32} : f32[16, 4] {{.*}}phase optimizer
# CHECK-NEXT: %[[HM:[0-9]+]] = state {name = "opt.h.m", init = zeros} : f32[16, 4]
# CHECK-NEXT: %[[HV:[0-9]+]] = state {name = "opt.h.v", init = zeros} : f32[16, 4]
# CHECK-NEXT: %[[HNM:[0-9]+]] = adam_m %[[HM]], %[[G32]] {{.*}} : f32[16, 4]
# CHECK-NEXT: %[[HNV:[0-9]+]] = adam_v %[[HV]], %[[G32]] {{.*}} : f32[16, 4]
# CHECK-NEXT: %[[NMASTER:[0-9]+]] = adamw %[[MASTER]], %[[HNM]], %[[HNV]], %[[STEP]] {{.*}} : f32[16, 4]
# CHECK-NEXT: %[[NH:[0-9]+]] = cast %[[NMASTER]] {dtype = bf16} : bf16[16, 4] {{.*}}phase optimizer
# CHECK: update %w = %[[NW]] grad %[[GW]]
# CHECK: update %[[HM]] = %[[HNM]]
# CHECK-NEXT: update %[[HV]] = %[[HNV]]
# CHECK-NEXT: update %[[MASTER]] = %[[NMASTER]]{{$}}
# CHECK-NEXT: update %h = %[[NH]] grad %[[GH]]
# SGD: state {name = "opt.w.momentum", init = zeros} : f32[8, 16]
# SGD-NOT: opt.w.master
# SGD: %[[MASTER:[0-9]+]] = state {name = "opt.h.master", init = param("h")} : f32[16, 4]
# SGD-NEXT: %[[G32:[0-9]+]] = cast %{{[0-9]+}} {dtype = f32} : f32[16, 4]
# SGD-NEXT: %[[BUF:[0-9]+]] = state {name = "opt.h.momentum", init = zeros} : f32[16, 4]
# SGD-NEXT: %[[NBUF:[0-9]+]] = momentum %[[BUF]], %[[G32]], %[[MASTER]] {{.*}} : f32[16, 4]
# SGD-NEXT: %[[NMASTER:[0-9]+]] = sgd %[[MASTER]], %[[NBUF]] {{.*}} : f32[16, 4]
# SGD-NEXT: cast %[[NMASTER]] {dtype = bf16} : bf16[16, 4]
mesh dp
input x : f32[4, 8]
param w : f32[8, 16] = normal(0.1)
param h : bf16[16, 4] = normal(0.1)
y = cast(x @ w, bf16) @ h
loss = mse(cast(y, f32), x @ w @ cast(h, f32))
train loss with adamw(lr = 0.001)
