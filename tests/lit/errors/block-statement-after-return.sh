# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# Nothing runs after return.
mesh dp, tp
block f(x : f32[4, 8]) -> f32[4, 8] {
    return relu(x)
    y = x + 1
}
input x : f32[4, 8]
z = f(x)
# CHECK: {{^}}{{.*}}block-statement-after-return.sh:7:5: error: statement after 'return' is never run{{$}}
# CHECK-NEXT: {{^}}    y = x + 1{{$}}
# CHECK-NEXT: {{^}}    ^{{$}}
