# RUN: %expect 1 %shardc %s --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# At most 8 axes; the caret is on the ninth.
mesh a, b, c, d, e, f, g, h, i
# CHECK: {{^}}{{.*}}mesh-too-many-axes.sh:4:30: error: a mesh has at most 8 axes{{$}}
# CHECK-NEXT: {{^}}mesh a, b, c, d, e, f, g, h, i{{$}}
# CHECK-NEXT: {{^}}                             ^{{$}}
