# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# Batch dimensions 2 and 3 do not broadcast.
mesh dp, tp
input x : f32[2, 4, 8]
input y : f32[3, 8, 4]
z = x @ y
# CHECK: {{^}}{{.*}}matmul-batch-mismatch.sh:7:7: error: batch dimensions of '@' do not broadcast: f32[2, 4, 8] @ f32[3, 8, 4]{{$}}
# CHECK-NEXT: {{^}}z = x @ y{{$}}
# CHECK-NEXT: {{^}}      ^{{$}}
