# A block that returns several values: each call binds them all, a return
# gives as many as the block declares, of the declared types.
# RUN: %expect 1 %shardc %s --mesh 1 -o %t.plan 2>&1 | FileCheck %s --check-prefix=ONE
# RUN: sed 's/^y = f(x)$/a, b, c = f(x)/' %s > %t.three.sh
# RUN: %expect 1 %shardc %t.three.sh --mesh 1 -o %t.plan 2>&1 | FileCheck %s --check-prefix=THREE
# RUN: sed 's/^y = f(x)$/a, b = tanh(x)/' %s > %t.unary.sh
# RUN: %expect 1 %shardc %t.unary.sh --mesh 1 -o %t.plan 2>&1 | FileCheck %s --check-prefix=UNARY
# RUN: sed -e 's/^    return h, 2.0 \* h$/    return h/' -e 's/^y = f(x)$/a, b = f(x)/' %s > %t.ret.sh
# RUN: %expect 1 %shardc %t.ret.sh --mesh 1 -o %t.plan 2>&1 | FileCheck %s --check-prefix=RET
# RUN: sed 's/^y = f(x)$/a, a = f(x)/' %s > %t.twice.sh
# RUN: %expect 1 %shardc %t.twice.sh --mesh 1 -o %t.plan 2>&1 | FileCheck %s --check-prefix=TWICE
# RUN: test ! -e %t.plan
# ONE: block-several-results.sh:23:5: error: block 'f' returns 2 values; bind each to a name, as in a, b = f(...)
# THREE: three.sh:23:11: error: this gives 2 values, but 3 names are bound to them
# UNARY: unary.sh:23:8: error: this gives one value, but 2 names are bound to it
# RET: ret.sh:21:5: error: block 'f' returns 1 value here, but declares 2
# TWICE: twice.sh:23:4: error: 'a' is bound twice here
mesh dp
input x : f32[4]
block f(h : f32[4]) -> (f32[4], f32[4]) {
    return h, 2.0 * h
}
y = f(x)
output y
