# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# A pipeline repeat is not nested in another repeat.
mesh dp, pp
input x : f32[8, 8]
repeat 2 as outer {
    repeat 2 as inner over pp {
        x = relu(x)
    }
}
# CHECK: {{^}}{{.*}}repeat-over-nested.sh:7:5: error: 'repeat ... over' belongs at the top level{{$}}
# CHECK-NEXT: {{^}}    repeat 2 as inner over pp {{{$}}
# CHECK-NEXT: {{^}}    ^{{$}}
