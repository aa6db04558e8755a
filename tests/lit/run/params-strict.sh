# --params is strict: the file must fit the plan. A tensor that is no param
# or state of the plan (a typo in a weight name, an input) and a param the
# file lacks are errors that name them (the plan's nearest name for a typo,
# the first 8 of a long list and how many more), before anything runs;
# --init-missing makes the missing params from the seed and says so.
# Optimizer states, and the f32 master of the bf16 param w1, may be missing:
# they start from their init, the master from w1 as read from the file.
# RUN: %shardc %s --mesh 2 -o %t.plan
# RUN: echo w1=BF16[4,4]:16128 b1=F32[4]:0 $(seq -f 'layers.%g.s=F32[4]:1' 0 9) > %t.specs
# RUN: python3 %S/../../tools/make_st.py %t.all $(cat %t.specs)
# RUN: %shardrun %t.plan --params %t.all | FileCheck %s --check-prefix=ALL
# ALL: made from seed 0: x, opt.
# ALL: step 1/1  loss
# RUN: python3 %S/../../tools/make_st.py %t.typo $(sed 's/^w1=/w_1=/' %t.specs)
# RUN: %expect 1 %shardrun %t.plan --params %t.typo 2>&1 | FileCheck %s --check-prefix=TYPO
# TYPO: shardrun: error: {{.*}}.typo: the params file has 1 tensor that is no param or state of the plan: 'w_1' (did you mean 'w1'?); and lacks 1 param of the plan: 'w1'{{$}}
# TYPO-NOT: step
# RUN: python3 %S/../../tools/make_st.py %t.extra $(cat %t.specs) x=F32[8,4]:1 zzz=F32[2]:0
# RUN: %expect 1 %shardrun %t.plan --params %t.extra 2>&1 | FileCheck %s --check-prefix=EXTRA
# EXTRA: shardrun: error: {{.*}}.extra: the params file has 2 tensors that are no param or state of the plan: 'x' (an input of the plan: inputs come from the inputs file), 'zzz'{{$}}
# RUN: python3 %S/../../tools/make_st.py %t.empty
# RUN: %expect 1 %shardrun %t.plan --params %t.empty 2>&1 | FileCheck %s --check-prefix=EMPTY
# EMPTY: shardrun: error: {{.*}}.empty: the params file lacks 12 params of the plan (it is empty): 'w1', 'b1', 'layers.0.s', 'layers.1.s', 'layers.2.s', 'layers.3.s', 'layers.4.s', 'layers.5.s' and 4 more{{$}}
# EMPTY-NEXT: shardrun: --init-missing makes the params missing from --params by their init from the seed
# EMPTY-NOT: step
# RUN: %expect 1 %shardrun %t.plan --params %t.empty --init-missing 2>&1 | FileCheck %s --check-prefix=NONE
# NONE: shardrun: error: {{.*}}.empty: the params file has none of the plan's 12 params (it is empty): making every one by its init would ignore the file{{$}}
# RUN: python3 %S/../../tools/make_st.py %t.part $(grep -o 'w1=[^ ]*' %t.specs)
# RUN: %expect 1 %shardrun %t.plan --params %t.part 2>&1 | FileCheck %s --check-prefix=PART
# PART: shardrun: error: {{.*}}.part: the params file lacks 11 params of the plan: 'b1', 'layers.0.s',
# RUN: %shardrun %t.plan --params %t.part --init-missing | FileCheck %s --check-prefix=INIT
# INIT: made from seed 0: x, b1, layers.0.s, layers.1.s, layers.2.s and {{[0-9]+}} more
# INIT: step 1/1  loss
# RUN: %expect 2 %shardrun %t.plan --init-missing 2>&1 | FileCheck %s --check-prefix=USAGE
# USAGE: shardrun: error: --init-missing needs --params (without it, every param is made from the seed)
# An inputs file holding params (they would be ignored there) is an error;
# one file given as both holds both.
# RUN: python3 %S/../../tools/make_st.py %t.in x=F32[8,4]:1 b1=F32[4]:0
# RUN: %expect 1 %shardrun %t.plan --params %t.all --inputs %t.in 2>&1 | FileCheck %s --check-prefix=INPUTS
# INPUTS: shardrun: error: {{.*}}.in: the inputs file has 1 tensor that is a param or state of the plan, which the params file gives, not the inputs file: 'b1'{{$}}
# RUN: python3 %S/../../tools/make_st.py %t.both $(cat %t.specs) x=F32[8,4]:1
# RUN: %shardrun %t.plan --params %t.both --inputs %t.both | FileCheck %s --check-prefix=BOTH
# BOTH: made from seed 0: opt.
mesh dp
input  x  : f32[8, 4] shard(dp, _)
param  w1 : bf16[4, 4] = normal(0.5)
param  b1 : f32[4] = zeros
h = cast(cast(x, bf16) @ w1, f32) + b1
repeat 10 as layers {
    param s : f32[4] = ones
    h = h * s
}
loss = mean(h * h)
output loss
train loss with adamw(lr = 0.01)
