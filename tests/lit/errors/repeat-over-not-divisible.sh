# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# 3 layers do not split over pp of size 2.
mesh dp, pp
input x : f32[4, 8]
repeat 3 as layers over pp {
    x = relu(x)
}
# CHECK: {{^}}{{.*}}repeat-over-not-divisible.sh:6:8: error: 3 repetitions do not split evenly over axis pp of size 2{{$}}
# CHECK-NEXT: {{^}}repeat 3 as layers over pp {{{$}}
# CHECK-NEXT: {{^}}       ^{{$}}
