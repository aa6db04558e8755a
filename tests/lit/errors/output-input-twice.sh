# RUN: %expect 1 %shardc %s --mesh 2 -o %t.plan 2>&1 | FileCheck %s
# RUN: test ! -e %t.plan
# An output may bear an input's name, but a name is handed back once, in
# one statement or in two.
mesh dp
input x : f32[4, 8]
output x
output x
# CHECK: {{^}}{{.*}}output-input-twice.sh:8:8: error: 'x' is already an output (line 7){{$}}
# CHECK-NEXT: {{^}}output x{{$}}
# CHECK-NEXT: {{^}}       ^{{$}}
