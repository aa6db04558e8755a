# The input gradients of layernorm and rmsnorm as one op each
# (passes/norm_grad.c): autodiff's ops from dy * g to dx (the row means of
# gx and gx * xh, the products and differences between) become
# layernorm_dx(dy, x, mean, rstd, g) or rmsnorm_dx(dy, x, r, g), which keep
# dx's value, sharding and phase. The statistics come from the forward:
# autodiff's mean(x) moves to just after the layernorm of x, and its
# rsqrt(mean((x - mean)^2) + eps) becomes layernorm_rstd(x) {eps} there,
# both in the forward's phase (no op of the backward reads x for them).
# The gain's gradient reads xh, made from x - mean, and, nothing else
# reading them, made again over the merged batch and sequence rows
# (combine.c's rows rule): one sum of dy * (x - mean) * rstd over the 32
# local rows (norm_cols.c, off here, then splits that sum into runs of
# rows: lit/passes/bucket/norm-cols.sh).
# RUN: env SHARDC_EXPERIMENT_NORM_COLS=0 %shardc %S/../../../examples/transformer.sh --mesh 2x2 -D L=1 -D S=16 -D D=32 -D NH=2 -D V=64 -D B=4 --emit sharded-ir | FileCheck %s
# CHECK:      layernorm %[[X:layers.0.x.1]], %lnf_g, %lnf_b {eps = 1e-05} : f32[2, 16, 32] auto(dp, _, _){{$}}
# CHECK-NEXT: %[[MU:[0-9]+]] = mean %[[X]] {axis = 2, keepdims = true} : f32[2, 16, 1] auto(dp, _, _){{$}}
# CHECK-NEXT: %[[RS:[0-9]+]] = layernorm_rstd %[[X]] {eps = 1e-05} : f32[2, 16, 1] auto(dp, _, _){{$}}
# CHECK-NOT:  rsqrt
# CHECK:      %[[XM:[0-9]+]] = reshape %[[X]] {shape = [32, 32]}
# CHECK-NEXT: %[[MUM:[0-9]+]] = reshape %[[MU]] {shape = [32, 1]}
# CHECK-NEXT: %[[XC2:[0-9]+]] = sub %[[XM]], %[[MUM]] : f32[32, 32] auto(dp, _) phase backward
# CHECK-NEXT: %[[RSM:[0-9]+]] = reshape %[[RS]] {shape = [32, 1]}
# CHECK-NEXT: %[[XH:[0-9]+]] = mul %[[XC2]], %[[RSM]]
# CHECK-NEXT: %[[G:[0-9]+]] = mul %{{[0-9]+}}, %[[XH]] : f32[32, 32]
# CHECK-NEXT: sum %[[G]] {axis = 0, keepdims = false} : f32[32] auto(_) partial(dp) phase backward
# CHECK-NOT:  mean
# CHECK:      %{{[0-9]+}} = layernorm_dx %{{[0-9]+}}, %[[X]], %[[MU]], %[[RS]], %lnf_g : f32[2, 16, 32] auto(dp, _, _) phase backward
# CHECK-COUNT-2: layernorm_dx
# CHECK-NOT:  layernorm_dx
#
# rmsnorm (examples/llama.sh): every norm's gradient one op, in bf16 too.
# RUN: %shardc %S/../../../examples/llama.sh --mesh 2x2 --emit sharded-ir | FileCheck %s --check-prefix=RMS
# RUN: %shardc %S/../../../examples/llama.sh --mesh 2x2 --dtype bf16 --emit sharded-ir | FileCheck %s --check-prefix=RMS16
# RMS:        rmsnorm %layers.3.x.1, %norm {eps = 1e-05}
# RMS-NEXT:   %[[R:[0-9]+]] = rmsnorm_rstd %layers.3.x.1 {eps = 1e-05} : f32[4, 128, 1] auto(dp, _, _){{$}}
# RMS:        %{{[0-9]+}} = rmsnorm_dx %{{[0-9]+}}, %layers.3.x.1, %[[R]], %norm : f32[4, 128, 256] auto(dp, _, _) phase backward
# RMS-COUNT-8: rmsnorm_dx
# RMS-NOT:    rmsnorm_dx
# RMS16:      rmsnorm_dx {{.*}} : bf16[4, 128, 256]
#
# dy through constrains that rename it (on a mesh of 1s, the layouts the
# sharding gave dy and gx hold the same bytes as x's): Megatron sequence
# parallelism on 1x1, whose final layernorm's x is split along the
# sequence over tp and its dy is not. The final norm is one op, reading
# dy itself, as on 1x4 (where dy's rows come split by a reduce-scatter);
# so are the other norms. The first layer's attention norm normalises
# the embeddings' x whole, its dy comes split: xh and rstd reach its
# backward as slices of their rows (on 1x4, over tp; on 1x1, constrains
# of the same bytes), so layernorm_dx reads the same slices of x and of
# the forward's mean and rstd, and no rsqrt is left. On 1x4 the gain's
# gradient computes x - mean and its product with rstd on those slices
# (the rank's rows, not the whole x and then its rows: passes/narrow.c),
# and layernorm_dx reads the slices that made.
# RUN: %shardc %S/../../diff/regress/sequence-parallel-transformer.sh --mesh 1x1 --emit sharded-ir | FileCheck %s --check-prefixes=RENAME,RENAME1
# RUN: %shardc %S/../../diff/regress/sequence-parallel-transformer.sh --mesh 1x4 --emit sharded-ir | FileCheck %s --check-prefixes=RENAME,SLICE
# RENAME:      %layers.0.attn.h = layernorm %x, %layers.0.attn.ln_g, %layers.0.attn.ln_b
# RENAME-NEXT: %[[MU0:[0-9]+]] = mean %x {axis = 2, keepdims = true} : f32[4, 8, 1] auto(dp, _, _){{$}}
# RENAME-NEXT: %[[RS0:[0-9]+]] = layernorm_rstd %x {eps = 1e-05} : f32[4, 8, 1] auto(dp, _, _){{$}}
# RENAME:      %[[LOGITS:logits]] = matmul
# RENAME-NOT:  rsqrt
# RENAME:      layernorm_dx %{{[0-9]+}}, %layers.1.x.1, %{{[0-9]+}}, %{{[0-9]+}}, %lnf_g : f32[4, {{8|2}}, 16] auto(dp, tp, _) phase backward
# RENAME-COUNT-3: layernorm_dx
# RENAME-NOT:  rsqrt
# RENAME1:     %[[MUS:[0-9]+]] = constrain %[[MU0]] {{.*}}: f32[4, 8, 1] auto(dp, tp, _) phase backward
# RENAME1-NEXT: %[[RSS:[0-9]+]] = constrain %[[RS0]] {{.*}}: f32[4, 8, 1] auto(dp, tp, _) phase backward
# RENAME1-NEXT: %[[XS:[0-9]+]] = constrain %x {{.*}}: f32[4, 8, 16] auto(dp, tp, _) phase backward
# RENAME1-NEXT: layernorm_dx %{{[0-9]+}}, %[[XS]], %[[MUS]], %[[RSS]], %layers.0.attn.ln_g : f32[4, 8, 16] auto(dp, tp, _) phase backward
# SLICE:       %[[X4:[0-9]+]] = slice %x {dim = 1, axes = [tp]} : f32[4, 2, 16] auto(dp, tp, _) phase backward
# SLICE-NEXT:  %[[M4:[0-9]+]] = slice %[[MU0]] {dim = 1, axes = [tp]} : f32[4, 2, 1] auto(dp, tp, _) phase backward
# SLICE-NEXT:  %[[XC4:[0-9]+]] = sub %[[X4]], %[[M4]] : f32[4, 2, 16] auto(dp, tp, _) phase backward
# SLICE-NEXT:  %[[R4:[0-9]+]] = slice %[[RS0]] {dim = 1, axes = [tp]} : f32[4, 2, 1] auto(dp, tp, _) phase backward
# SLICE-NEXT:  mul %[[XC4]], %[[R4]] : f32[4, 2, 16] auto(dp, tp, _) phase backward
# SLICE-NOT:   slice
# SLICE:       layernorm_dx %{{[0-9]+}}, %[[X4]], %[[M4]], %[[R4]], %layers.0.attn.ln_g : f32[4, 2, 16] auto(dp, tp, _) phase backward
# RENAME-NOT:  layernorm_dx
# RENAME-NOT:  rsqrt
#
# gx itself through a constrain of the same bytes that two ops read:
# llama.sh with sequence parallelism (its residual stream split over tp
# along the sequence) on 1x1, where the final rmsnorm's dy comes from the
# tied head's product in another layout. Every rmsnorm's gradient is one
# op, the final one's reading dy itself; on 1x4 too, and the two meshes'
# losses over 4 steps agree to 1e-5 relatively (the model run smaller, S 32,
# D 64, F 176, V 128: the example's size took 35 s under ASan).
# RUN: sed -e 's/^    x = x + attn(x, cs, sn)$/    x = (x + attn(x, cs, sn)) shard(dp, tp, _)/' -e 's/^    x = x + mlp(x)$/    x = (x + mlp(x)) shard(dp, tp, _)/' %S/../../../examples/llama.sh > %t.spl.sh
# RUN: grep -c 'shard(dp, tp, _)$' %t.spl.sh | FileCheck %s --check-prefix=SEDS
# SEDS: {{^2$}}
# RUN: %shardc %t.spl.sh --mesh 1x1 --emit sharded-ir | FileCheck %s --check-prefix=GXC
# RUN: %shardc %t.spl.sh --mesh 1x4 --emit sharded-ir | FileCheck %s --check-prefix=GXC
# GXC-NOT:     rsqrt
# GXC:         rmsnorm_dx %{{[0-9]+}}, %layers.3.x.1, %{{[0-9]+}}, %norm : f32[8, {{128|32}}, 256] auto(dp, tp, _) phase backward
# GXC-COUNT-8: rmsnorm_dx
# GXC-NOT:     rmsnorm_dx
# GXC-NOT:     rsqrt
# RUN: %shardc %t.spl.sh --mesh 1x1 -D S=32 -D D=64 -D F=176 -D V=128 --arch none -o %t.spl1.plan
# RUN: %shardc %t.spl.sh --mesh 1x4 -D S=32 -D D=64 -D F=176 -D V=128 --arch none -o %t.spl4.plan
# RUN: %shardrun %t.spl1.plan --steps 4 > %t.spl1.txt
# RUN: %shardrun %t.spl4.plan --steps 4 > %t.spl4.txt
# RUN: python3 -c "import sys,re; l=[[float(x) for x in re.findall(r'step \d+/\d+  loss (\S+)', open(p).read())] for p in sys.argv[1:]]; print(len(l[0]), 'steps', 'agree' if len(l[0]) == 4 and len(l[1]) == 4 and all(abs(a-b) <= 1e-5*abs(b) for a,b in zip(*l)) else 'differ ' + str(l))" %t.spl1.txt %t.spl4.txt | FileCheck %s --check-prefix=SAME
#
# x needs no gradient (an input: norm-input.model), so no layernorm_dx
# makes xh anew for the gain's gradient, which reads x - mean: the
# statistics still come from the forward, x - mean staying in the
# backward, reading the moved mean. The same model with the normalised dim
# split over tp (autodiff's ops: partial sums and all-reduces) gives the
# same losses over 4 steps, to 1e-5 relatively.
# RUN: %shardc %S/norm-input.model --mesh 2x2 --emit sharded-ir | FileCheck %s --check-prefix=INPUT
# INPUT:      layernorm %x, %g, %b {eps = 1e-05} : f32[2, 16] auto(dp, _){{$}}
# INPUT-NEXT: %[[IMU:[0-9]+]] = mean %x {axis = 1, keepdims = true} : f32[2, 1] auto(dp, _){{$}}
# INPUT-NEXT: %[[IRS:[0-9]+]] = layernorm_rstd %x {eps = 1e-05} : f32[2, 1] auto(dp, _){{$}}
# INPUT-NOT:  rsqrt
# INPUT:      %[[IXC:[0-9]+]] = sub %x, %[[IMU]] : f32[2, 16] auto(dp, _) phase backward
# INPUT-NEXT: mul %[[IXC]], %[[IRS]] : f32[2, 16] auto(dp, _) phase backward
# INPUT-NOT:  rsqrt
# INPUT-NOT:  mean %x
# RUN: sed -e 's/^input  x : f32\[4, 16\] shard(dp, _)$/input  x : f32[4, 16] shard(dp, tp)/' -e 's/^param  g : f32\[16\] = ones$/param  g : f32[16] shard(tp) = ones/' -e 's/^param  b : f32\[16\] = zeros$/param  b : f32[16] shard(tp) = zeros/' -e 's/^param  w : f32\[16, 4\] = normal(0.3)$/param  w : f32[16, 4] shard(tp, _) = normal(0.3)/' %S/norm-input.model > %t.isplit.model
# RUN: grep -c 'shard(.*tp' %t.isplit.model | FileCheck %s --check-prefix=ISEDS
# ISEDS: {{^4$}}
# RUN: %shardc %t.isplit.model --mesh 2x2 --emit sharded-ir | FileCheck %s --check-prefix=ISPLIT
# ISPLIT:     rsqrt
# RUN: %shardc %S/norm-input.model --mesh 2x2 --arch none -o %t.input.plan
# RUN: %shardc %t.isplit.model --mesh 2x2 --arch none -o %t.isplit.plan
# RUN: %shardrun %t.input.plan --steps 4 > %t.input.txt
# RUN: %shardrun %t.isplit.plan --steps 4 > %t.isplit.txt
# RUN: python3 -c "import sys,re; l=[[float(x) for x in re.findall(r'step \d+/\d+  loss (\S+)', open(p).read())] for p in sys.argv[1:]]; print(len(l[0]), 'steps', 'agree' if len(l[0]) == 4 and len(l[1]) == 4 and all(abs(a-b) <= 1e-5*abs(b) for a,b in zip(*l)) else 'differ ' + str(l))" %t.input.txt %t.isplit.txt | FileCheck %s --check-prefix=SAME
#
# A normalised dim split over tp: the means are partial sums and
# all-reduces, not autodiff's form, which stays.
# RUN: %shardc %S/norm-split.model --mesh 2x2 --emit sharded-ir | FileCheck %s --check-prefix=SPLIT
# SPLIT-NOT:  layernorm_dx
# SPLIT:      all_reduce {{.*}} : f32[2, 1] auto(dp, _) phase backward
# SPLIT-NOT:  layernorm_dx
#
# The new op computes what autodiff's ops did: the same model with the
# normalised dim whole (layernorm_dx) and split over tp (autodiff's ops),
# 4 SGD steps on 2x2 from the same params; w0 learns only through dx. The
# losses agree to 1e-5 relatively (f32 sums in other orders).
# RUN: %shardc %S/norm-whole.model --mesh 2x2 --emit sharded-ir | FileCheck %s --check-prefix=WHOLE
# WHOLE: layernorm_dx
# RUN: %shardc %S/norm-whole.model --mesh 2x2 --arch none -o %t.whole.plan
# RUN: %shardc %S/norm-split.model --mesh 2x2 --arch none -o %t.split.plan
# RUN: %shardrun %t.whole.plan --steps 4 > %t.whole.txt
# RUN: %shardrun %t.split.plan --steps 4 > %t.split.txt
# RUN: python3 -c "import sys,re; l=[[float(x) for x in re.findall(r'step \d+/\d+  loss (\S+)', open(p).read())] for p in sys.argv[1:]]; print(len(l[0]), 'steps', 'agree' if len(l[0]) == 4 and len(l[1]) == 4 and all(abs(a-b) <= 1e-5*abs(b) for a,b in zip(*l)) else 'differ ' + str(l))" %t.whole.txt %t.split.txt | FileCheck %s --check-prefix=SAME
# SAME: 4 steps agree
