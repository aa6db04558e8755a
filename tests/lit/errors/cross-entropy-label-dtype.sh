# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# Labels are class indices: i32.
mesh dp, tp
input logits : f32[4, 10]
input labels : f32[4]
loss = cross_entropy(logits, labels)
# CHECK: {{^}}{{.*}}cross-entropy-label-dtype.sh:7:8: error: cross_entropy labels must be i32, got f32[4]{{$}}
# CHECK-NEXT: {{^}}loss = cross_entropy(logits, labels){{$}}
# CHECK-NEXT: {{^}}       ^{{$}}
