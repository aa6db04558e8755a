# Inputs and outputs are separate namespaces (LANGUAGE.md §12): an output
# may bear the name of an input (here reassigned: the output is the new
# value) or of a param. In a training step a param's output is its value
# after the update; the plan's I/O table holds both entries of each name.
# RUN: %shardc %s --mesh 2x2 --emit ir | FileCheck %s --check-prefix=IR
# RUN: %shardc %s --mesh 2x2 --emit train-ir | FileCheck %s --check-prefix=TRAIN
# RUN: %shardc %s --mesh 2x2 --emit train-ir -o %t.ir
# RUN: %shardc %t.ir --mesh 2x2 --emit train-ir | FileCheck %s --check-prefix=TRAIN
# RUN: %shardc %s --mesh 2x2 --arch none --emit schedule | FileCheck %s --check-prefix=PLAN
mesh dp, tp
input x : f32[8, 16] shard(dp, _)
input y : f32[8, 16] shard(dp, _)
param w : f32[16, 16] shard(_, tp) = normal(0.02)
x = x @ w
loss = mse(x, y)
output x, w, y, loss
train loss with sgd(lr = 0.01)
# IR: {{^}}%x.1 = matmul %x, %w : f32[8, 16]{{$}}
# IR: {{^}}output "x" = %x.1{{$}}
# IR-NEXT: {{^}}output "w" = %w{{$}}
# IR-NEXT: {{^}}output "y" = %y{{$}}
# TRAIN: {{^}}%[[NEW:[0-9]+]] = sgd %w, %[[G:[0-9]+]] {lr = 0.01, wd = 0.0} : f32[16, 16] auto(_, tp) phase optimizer{{$}}
# TRAIN-NEXT: {{^}}output "x" = %x.1{{$}}
# TRAIN-NEXT: {{^}}output "w" = %[[NEW]]{{$}}
# TRAIN-NEXT: {{^}}output "y" = %y{{$}}
# TRAIN-NEXT: {{^}}output "loss" = %loss{{$}}
# TRAIN-NEXT: {{^}}update %w = %[[NEW]] grad %[[G]]{{$}}
# PLAN: {{^}}input "x" : f32[8, 16] shard(dp, _){{$}}
# PLAN-NEXT: {{^}}input "y" : f32[8, 16] shard(dp, _){{$}}
# PLAN-NEXT: {{^}}param "w" : f32[16, 16] shard(_, tp) = %[[W:[0-9]+]] <- %[[W]]{{$}}
# PLAN-NEXT: {{^}}output "x" : f32[8, 16] shard(dp, tp) = %{{[0-9]+}}{{$}}
# PLAN-NEXT: {{^}}output "w" : f32[16, 16] shard(_, tp) = %[[W]]{{$}}
# PLAN-NEXT: {{^}}output "y" : f32[8, 16] shard(dp, _) = %{{[0-9]+}}{{$}}
