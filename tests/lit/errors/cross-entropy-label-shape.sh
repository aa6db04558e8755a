# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# Labels have the shape of logits without its last dimension.
mesh dp, tp
input logits : f32[4, 10]
input labels : i32[4, 10]
loss = cross_entropy(logits, labels)
# CHECK: {{^}}{{.*}}cross-entropy-label-shape.sh:7:8: error: cross_entropy needs labels of shape [4] for logits f32[4, 10], got i32[4, 10]{{$}}
# CHECK-NEXT: {{^}}loss = cross_entropy(logits, labels){{$}}
# CHECK-NEXT: {{^}}       ^{{$}}
