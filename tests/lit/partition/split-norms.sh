# layernorm and rmsnorm over a last dim split over tp: the statistics are
# local sums all-reduced over tp (one element per row each) and divided by
# the global size (16), layernorm's variance in a second pass over x minus
# the mean, eps added as runtime/cpu/cpu.c adds it; the gains and the bias are
# used split like the dim (propagation gives them tp), the result stays
# split. A bf16 operand is computed in f32 and rounded once at the end.
# RUN: %shardc %s --mesh 2x2 --emit sharded-ir | FileCheck %s --check-prefix=IR
# RUN: %shardc %s --mesh 2x2 --report json | FileCheck %s --check-prefix=JSON
mesh dp, tp
input  x  : f32[8, 16] shard(dp, tp)
input  xb : bf16[8, 16] shard(dp, tp)
param  g  : f32[16] = ones
param  b  : f32[16] = zeros
param  gb : bf16[16] = ones
y = layernorm(x, g, b)
r = rmsnorm(x, g)
rb = rmsnorm(xb, gb)
output y, r, rb
# IR:      %g = param {name = "g", init = ones} : f32[8] auto(tp)
# IR-NEXT: %b = param {name = "b", init = zeros} : f32[8] auto(tp)
# IR-NEXT: %gb = param {name = "gb", init = ones} : bf16[8] auto(tp)
# IR-NEXT: %[[N:[0-9]+]] = const {value = 16.0} : f32[] auto()
# IR-NEXT: %y_mean = sum %x {axis = 1, keepdims = true} : f32[4, 1] auto(dp, _) partial(tp)
# IR-NEXT: %[[S1:[0-9]+]] = all_reduce %y_mean {axes = [tp]} : f32[4, 1] auto(dp, _)
# IR-NEXT: %[[MEAN:[0-9]+]] = div %[[S1]], %[[N]] : f32[4, 1] auto(dp, _)
# IR-NEXT: %[[C:[0-9]+]] = sub %x, %[[MEAN]] : f32[4, 8] auto(dp, tp)
# IR-NEXT: %[[SQ:[0-9]+]] = mul %[[C]], %[[C]] : f32[4, 8] auto(dp, tp)
# IR-NEXT: %y_sumsq = sum %[[SQ]] {axis = 1, keepdims = true} : f32[4, 1] auto(dp, _) partial(tp)
# IR-NEXT: %[[S2:[0-9]+]] = all_reduce %y_sumsq {axes = [tp]} : f32[4, 1] auto(dp, _)
# IR-NEXT: %[[VAR:[0-9]+]] = div %[[S2]], %[[N]] : f32[4, 1] auto(dp, _)
# IR-NEXT: %[[EPS:[0-9]+]] = const {value = 1e-05} : f32[] auto()
# IR-NEXT: %[[VE:[0-9]+]] = add %[[VAR]], %[[EPS]] : f32[4, 1] auto(dp, _)
# IR-NEXT: %[[R:[0-9]+]] = rsqrt %[[VE]] : f32[4, 1] auto(dp, _)
# IR-NEXT: %[[XH:[0-9]+]] = mul %[[C]], %[[R]] : f32[4, 8] auto(dp, tp)
# IR-NEXT: %[[XG:[0-9]+]] = mul %[[XH]], %g : f32[4, 8] auto(dp, tp)
# IR-NEXT: %y = add %[[XG]], %b : f32[4, 8] auto(dp, tp)
# IR:      %r_sumsq = sum %{{[0-9]+}} {axis = 1, keepdims = true} : f32[4, 1] auto(dp, _) partial(tp)
# IR-NEXT: %{{[0-9]+}} = all_reduce %r_sumsq {axes = [tp]} : f32[4, 1] auto(dp, _)
# IR:      %r = mul %{{[0-9]+}}, %g : f32[4, 8] auto(dp, tp)
# IR-NEXT: %[[GB:[0-9]+]] = cast %gb {dtype = f32} : f32[8] auto(tp)
# IR-NEXT: %[[XB:[0-9]+]] = cast %xb {dtype = f32} : f32[4, 8] auto(dp, tp)
# IR:      %rb_sumsq = sum %{{[0-9]+}} {axis = 1, keepdims = true} : f32[4, 1] auto(dp, _) partial(tp)
# IR:      %[[RB:[0-9]+]] = mul %{{[0-9]+}}, %[[GB]] : f32[4, 8] auto(dp, tp)
# IR-NEXT: %rb = cast %[[RB]] {dtype = bf16} : bf16[4, 8] auto(dp, tp)
# IR-NOT:  all_gather
# JSON: "collectives": [{"kind": "all_reduce", "axes": ["tp"], "dtype": "f32", "elements": 4, "phase": "forward"}, {"kind": "all_reduce", "axes": ["tp"], "dtype": "f32", "elements": 4, "phase": "forward"}, {"kind": "all_reduce", "axes": ["tp"], "dtype": "f32", "elements": 4, "phase": "forward"}, {"kind": "all_reduce", "axes": ["tp"], "dtype": "f32", "elements": 4, "phase": "forward"}]}]}
