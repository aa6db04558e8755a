# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# 2^62 * 4 elements overflow the element count.
mesh dp, tp
input x : f32[4611686018427387904, 4]
# CHECK: {{^}}{{.*}}too-many-elements.sh:5:36: error: 'x' has too many elements{{$}}
# CHECK-NEXT: {{^}}input x : f32[4611686018427387904, 4]{{$}}
# CHECK-NEXT: {{^}}                                   ^{{$}}
