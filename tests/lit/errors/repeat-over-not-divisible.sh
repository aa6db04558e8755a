# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# Each stage needs a repetition at least: 1 layer cannot fill pp of size 2
# (any count from 2 on splits, unevenly where it must).
mesh dp, pp
input x : f32[4, 8]
repeat 1 as layers over pp {
    x = relu(x)
}
# CHECK: {{^}}{{.*}}repeat-over-not-divisible.sh:7:8: error: 1 repetitions cannot fill the 2 stages of axis pp (one each at least){{$}}
# CHECK-NEXT: {{^}}repeat 1 as layers over pp {{{$}}
# CHECK-NEXT: {{^}}       ^{{$}}
