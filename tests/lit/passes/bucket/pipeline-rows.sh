# A bias's or a norm gain's gradient in a pipeline, summed over a
# microbatch's batch and sequence rows at once (passes/combine.c): before
# the split, where the rows rule would hide the batch dim the split cuts,
# the sum over the batch of the sum over the sequence stands for the sum
# over the sequence of the sum over the batch (pipeline.sh on 2x2x2: the
# final layernorm's bias, sum over dim 1 of dy [4, 128, 256], then over
# dim 0, then the all-reduce over dp), so the split accumulates each
# microbatch's [256] where it had accumulated its [128, 256] and summed
# that once a step; on each stage, the two sums of a microbatch are one
# over its 128 merged rows (the rows rule in pass_combine_batch), the
# bias's and the gain's (over the same rows, made again there) siblings,
# and each microbatch after the first adds its [256] to the running sum.
# RUN: %shardc %S/../../../../examples/pipeline.sh --mesh 2x2x2 --stop-after=partition | FileCheck %s --check-prefix=PART
# RUN: %shardc %S/../../../../examples/pipeline.sh --mesh 2x2x2 --stop-after=bucket | FileCheck %s --check-prefix=STAGE
# RUN: %shardc %S/../../../../examples/pipeline.sh --mesh 1x2x1 --stop-after=bucket | FileCheck %s --check-prefix=ONE
# PART:      %[[Y:[0-9]+]] = sum %[[DY:[0-9]+]] {axis = 1, keepdims = false} : f32[4, 256] auto(dp, _) phase backward
# PART-NEXT: %[[B:[0-9]+]] = sum %[[Y]] {axis = 0, keepdims = false} : f32[256] auto(_) partial(dp) phase backward
# PART-NEXT: all_reduce %[[B]] {axes = [dp]} : f32[256] auto(_) phase backward
# PART:      layernorm_dx %[[DY]], %layers.3.x.1,
# PART-NOT:  f32[128, 256] auto(_, _) partial(dp) rep
# the one [S, D] sum left: the position embedding's gradient
# PART:      sum %{{[0-9]+}} {axis = 0, keepdims = false} : f32[128, 256] auto(_, _) partial(dp) phase backward
# PART-NEXT: all_reduce
# PART-NEXT: embedding_grad
# STAGE:      // ---- stage 1 of 2 ----
# STAGE:      %[[DY:[0-9]+]] = all_reduce %{{[0-9]+}} {axes = [tp]} : f32[1, 128, 256] auto(dp, _, _) phase backward
# STAGE:      %[[R:[0-9]+]] = reshape %[[DY]] {shape = [128, 256]} : f32[128, 256] auto(dp, _) phase backward
# STAGE-NEXT: %[[B:[0-9]+]] = sum %[[R]] {axis = 0, keepdims = false} : f32[256] auto(_) partial(dp) phase backward
# STAGE:      %[[G:[0-9]+]] = sum %{{[0-9]+}} {axis = 0, keepdims = false} : f32[256] auto(_) partial(dp) phase backward
# STAGE-NEXT: layernorm_dx %[[DY]], %layers.3.x.1, %{{[0-9]+}}, %{{[0-9]+}}, %lnf_g : f32[1, 128, 256]
# STAGE:      add %[[B]], %{{[0-9]+}} : f32[256] auto(_) partial(dp) phase backward
# STAGE-NEXT: add %[[G]], %{{[0-9]+}} : f32[256] auto(_) partial(dp) phase backward
# On one rank of dp, through the constrain that resolves the partial sum
# over dp (of size 1), after the one sum: a microbatch of 2 sequences,
# 256 merged rows.
# ONE:      // ---- stage 1 of 2 ----
# ONE:      matmul %{{[0-9]+}}, %wlm {trans = b}
# ONE-NEXT: %[[DY:[0-9]+]] = constrain %{{[0-9]+}} : f32[2, 128, 256] auto(dp, _, _) phase backward
# ONE:      %[[R:[0-9]+]] = reshape %[[DY]] {shape = [256, 256]} : f32[256, 256] auto(dp, _) phase backward
# ONE-NEXT: %[[B:[0-9]+]] = sum %[[R]] {axis = 0, keepdims = false} : f32[256] auto(_) partial(dp) phase backward
# ONE:      add %[[B]], %{{[0-9]+}} : f32[256] auto(_) partial(dp) phase backward
# ONE:      constrain %{{[0-9]+}} : f32[256] auto(_) phase backward
