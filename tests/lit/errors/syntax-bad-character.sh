# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# '$' is not a character of the language.
mesh dp, tp
input x : f32[4, 8]
y = x $ 2
# CHECK: {{^}}{{.*}}syntax-bad-character.sh:6:7: error: unexpected character '$'{{$}}
# CHECK-NEXT: {{^}}y = x $ 2{{$}}
# CHECK-NEXT: {{^}}      ^{{$}}
