# RUN: %expect 1 %shardc %s --mesh 2x2 --emit ir -o %t.ir 2>&1 | FileCheck %s
# RUN: test ! -e %t.ir
# The dtype of cast is a dtype word, not a string.
mesh dp, tp
input x : f32[4, 8]
y = cast(x, "bf16")
# CHECK: {{^}}{{.*}}cast-to-string.sh:6:13: error: argument 'dtype' of 'cast' must be a dtype (f32, f16, bf16 or i32){{$}}
# CHECK-NEXT: {{^}}y = cast(x, "bf16"){{$}}
# CHECK-NEXT: {{^}}            ^{{$}}
