# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# over an axis the mesh lacks.
mesh dp, tp
input x : f32[4, 8]
repeat 4 as layers over pp {
    x = relu(x)
}
# CHECK: {{^}}{{.*}}repeat-over-unknown-axis.sh:6:25: error: unknown mesh axis 'pp'{{$}}
# CHECK-NEXT: {{^}}repeat 4 as layers over pp {{{$}}
# CHECK-NEXT: {{^}}                        ^{{$}}
