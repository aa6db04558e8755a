# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# The second call of block b names its weight b.1.w, which the second
# repetition of 'repeat 2 as b' already named.
mesh dp, tp
input x : f32[4, 8]
block b(h : f32[4, 8]) -> f32[4, 8] {
    param w : f32[8] = ones
    return h * w
}
repeat 2 as b {
    param w : f32[8] = zeros
    x = x + w
}
y = b(x)
z = b(y)
# CHECK: {{^}}{{.*}}param-full-name-twice.sh:8:11: error: two params have the full name 'b.1.w' (the other is on line 12){{$}}
# CHECK-NEXT: {{^}}    param w : f32[8] = ones{{$}}
# CHECK-NEXT: {{^}}          ^{{$}}
