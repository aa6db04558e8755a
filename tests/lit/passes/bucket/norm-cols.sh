# A layernorm's gain and bias gradients, column sums over the batch's
# rows, as partial sums over runs of rows and the sum of those
# (passes/norm_cols.c, run by the bucket pass): on 2x1, each rank's 128
# rows (4 sequences of 32) of the MLP's layernorm are 8 runs of 16. layernorm_dx and the
# residual gradient's add move before the sums' ops; the sums' chains
# take [8, 16, 32] and [8, 16, 1] in place, each partial sum (axis 1) at
# its sum's place, f32, and the sums of the partial rows (axis 0, partial
# over dp as the sums were) after the last, before the bucket's insert.
# The last layernorm (no add) too; with $SHARDC_EXPERIMENT_NORM_COLS=0
# the sums stay whole.
# RUN: %shardc %S/../../../../examples/transformer.sh -D B=8 -D S=32 -D D=32 -D NH=2 -D V=64 -D L=1 --mesh 2x1 --stop-after=bucket | FileCheck %s
# RUN: env SHARDC_EXPERIMENT_NORM_COLS=0 %shardc %S/../../../../examples/transformer.sh -D B=8 -D S=32 -D D=32 -D NH=2 -D V=64 -D L=1 --mesh 2x1 --stop-after=bucket | FileCheck %s --check-prefix=OFF
# A bf16 model: the partial sums of f32 casts, the sums of the partial
# rows cast back.
# RUN: sed 's/f32\[/bf16[/g' %S/../../../../examples/transformer.sh > %t.bf16.sh
# RUN: %shardc %t.bf16.sh -D B=4 -D S=32 -D D=32 -D NH=2 -D V=64 -D L=1 --mesh 1x1 --stop-after=bucket | FileCheck %s --check-prefix=BF16
# CHECK: = layernorm_dx %{{[0-9]+}}, %layers.0.x.1, %{{[0-9]+}}, %{{[0-9]+}}, %lnf_g : f32[4, 32, 32]
# CHECK-NEXT: %[[DY0:[0-9]+]] = reshape %{{[0-9]+}} {shape = [8, 16, 32]} : f32[8, 16, 32] auto(dp, _, _)
# CHECK-NEXT: %[[B0:[0-9]+]] = sum %[[DY0]] {axis = 1, keepdims = false} : f32[8, 32] auto(dp, _)
# CHECK: %[[LN:[0-9]+]] = layernorm_dx %[[DY:[0-9]+]], %layers.0.x, %[[MU:[0-9]+]], %[[RS:[0-9]+]], %layers.0.mlp.ln_g : f32[4, 32, 32]
# CHECK-NEXT: = add %{{[0-9]+}}, %[[LN]] : f32[4, 32, 32]
# CHECK-NEXT: %[[DYR:[0-9]+]] = reshape %[[DY]] {shape = [8, 16, 32]} : f32[8, 16, 32] auto(dp, _, _)
# CHECK-NEXT: %[[BP:[0-9]+]] = sum %[[DYR]] {axis = 1, keepdims = false} : f32[8, 32] auto(dp, _)
# CHECK-NEXT: %[[XR:[0-9]+]] = reshape %layers.0.x {shape = [8, 16, 32]} : f32[8, 16, 32]
# CHECK-NEXT: %[[MR:[0-9]+]] = reshape %[[MU]] {shape = [8, 16, 1]} : f32[8, 16, 1]
# CHECK-NEXT: %[[XC:[0-9]+]] = sub %[[XR]], %[[MR]] : f32[8, 16, 32]
# CHECK-NEXT: %[[RR:[0-9]+]] = reshape %[[RS]] {shape = [8, 16, 1]} : f32[8, 16, 1]
# CHECK-NEXT: %[[XH:[0-9]+]] = mul %[[XC]], %[[RR]] : f32[8, 16, 32]
# CHECK-NEXT: %[[G:[0-9]+]] = mul %[[DYR]], %[[XH]] : f32[8, 16, 32]
# CHECK-NEXT: %[[GP:[0-9]+]] = sum %[[G]] {axis = 1, keepdims = false} : f32[8, 32] auto(dp, _)
# CHECK-NEXT: %[[GS:[0-9]+]] = sum %[[GP]] {axis = 0, keepdims = false} : f32[32] auto(_) partial(dp)
# CHECK-NEXT: %[[BS:[0-9]+]] = sum %[[BP]] {axis = 0, keepdims = false} : f32[32] auto(_) partial(dp)
# CHECK-NEXT: = insert %{{[0-9]+}}, %[[BS]]
# OFF-NOT: {axis = 1, keepdims = false} : f32[8, 32]
# OFF: = sum %{{[0-9]+}} {axis = 0, keepdims = false} : f32[32] auto(_) partial(dp)
# OFF-NOT: {axis = 1, keepdims = false} : f32[8, 32]
# BF16: %[[LN:[0-9]+]] = layernorm_dx %[[DY:[0-9]+]], %layers.0.x, %{{[0-9]+}}, %{{[0-9]+}}, %layers.0.mlp.ln_g : bf16[4, 32, 32]
# BF16-NEXT: = add %{{[0-9]+}}, %[[LN]] : bf16[4, 32, 32]
# BF16-NEXT: %[[DYR:[0-9]+]] = reshape %[[DY]] {shape = [8, 16, 32]} : bf16[8, 16, 32]
# BF16-NEXT: %[[C:[0-9]+]] = cast %[[DYR]] {dtype = f32} : f32[8, 16, 32]
# BF16-NEXT: %[[BP:[0-9]+]] = sum %[[C]] {axis = 1, keepdims = false} : f32[8, 32]
# BF16: %[[G:[0-9]+]] = mul %[[DYR]], %{{[0-9]+}} : bf16[8, 16, 32]
# BF16-NEXT: %[[GC:[0-9]+]] = cast %[[G]] {dtype = f32} : f32[8, 16, 32]
# BF16-NEXT: %[[GP:[0-9]+]] = sum %[[GC]] {axis = 1, keepdims = false} : f32[8, 32]
# BF16-NEXT: %[[GS:[0-9]+]] = sum %[[GP]] {axis = 0, keepdims = false} : f32[32]
# BF16-NEXT: = cast %[[GS]] {dtype = bf16} : bf16[32]
# BF16-NEXT: %[[BS:[0-9]+]] = sum %[[BP]] {axis = 0, keepdims = false} : f32[32]
# BF16-NEXT: = cast %[[BS]] {dtype = bf16} : bf16[32]
