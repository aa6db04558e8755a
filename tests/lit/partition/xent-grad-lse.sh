# Cross-entropy's gradient from the forward's log-sum-exp
# (passes/xent_grad.c): autodiff's cross_entropy_grad(logits, labels)
# finds each row's max and sum again; where cross_entropy of the same
# logits (here through the partitioner's constrain, an identity of the
# same local type) comes before it, cross_entropy_lse(logits), f32
# [..., 1], is made just after that loss, in its phase, and the gradient
# reads it as its third operand. Logits split along the classes (2x2:
# the lm head column-parallel over tp) keep partition_split.c's form,
# which reads the forward's all-reduced statistics: no cross_entropy_lse.
# A pipeline stage adds each microbatch's loss into the step's after the
# task's other ops, so nothing comes between a loss and its lse (the
# fusion stores the lse from the loss's kernel).
# RUN: %shardc %S/../../../examples/transformer.sh --mesh 1x1 -D L=1 -D S=16 -D D=32 -D NH=2 -D V=64 -D B=4 --emit sharded-ir | FileCheck %s
# CHECK:      %[[LOSS:[0-9]+]] = cross_entropy %[[L:[0-9]+]], %targets : f32[] auto() partial(dp){{$}}
# CHECK-NEXT: %[[LSE:[0-9]+]] = cross_entropy_lse %[[L]] : f32[4, 16, 1] auto(dp, _, _){{$}}
# CHECK:      %[[LB:[0-9]+]] = constrain %logits : f32[4, 16, 64] auto(dp, _, _) phase backward
# CHECK-NEXT: cross_entropy_grad %[[LB]], %targets, %[[LSE]] : f32[4, 16, 64] auto(dp, _, _) phase backward
# CHECK-NOT:  cross_entropy_lse
# RUN: %shardc %S/../../../examples/transformer.sh --mesh 2x2 -D L=1 -D S=16 -D D=32 -D NH=2 -D V=64 -D B=4 --emit sharded-ir | FileCheck %s --check-prefix=SPLIT
# SPLIT:     %logits = matmul %{{[0-9]+}}, %wlm : f32[2, 16, 32] auto(dp, _, tp)
# SPLIT-NOT: cross_entropy_lse
# SPLIT-NOT: cross_entropy_grad %
# RUN: %shardc %S/../../../examples/pipeline.sh --mesh 1x2x1 -D L=2 --emit stage-ir | FileCheck %s --check-prefix=PIPE
# PIPE:      %[[L0:[0-9]+]] = cross_entropy %[[X0:[0-9]+]], %targets.2 : f32[] auto() partial(dp){{$}}
# PIPE-NEXT: %[[S0:[0-9]+]] = cross_entropy_lse %[[X0]] : f32[2, 128, 1] auto(dp, _, _){{$}}
# PIPE:      cross_entropy_grad %{{[0-9]+}}, %targets.2, %[[S0]] :
# PIPE:      %[[L1:[0-9]+]] = cross_entropy %[[X1:[0-9]+]], %targets.4 : f32[] auto() partial(dp){{$}}
# PIPE-NEXT: cross_entropy_lse %[[X1]] : f32[2, 128, 1] auto(dp, _, _){{$}}
# PIPE-NEXT: add %[[L0]], %[[L1]] : f32[] auto() partial(dp){{$}}
