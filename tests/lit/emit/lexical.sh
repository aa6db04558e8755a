# Comments run from `#` to the end of the line, after code too, and inside
# open brackets; a newline inside (...) or [...] does not end the statement.
# The printer never echoes comments.
# RUN: %shardc %s --mesh 2x2 --emit ir | FileCheck %s

   # an indented comment line
mesh dp = 2, tp = 2   # sizes; --mesh replaces them
let B = 8, D = (    # a constant expression over
        2 * 8       # several lines
    )
input x : f32[B,    # rows
              D] shard(dp, # split rows
                       _)  # replicated columns
param w : f32[D, D] shard(_, tp) = normal(
    0.02)
y = gelu(x @ w
         + 1.0      # the argument list continues
         )
z = reshape(y, [
    -1,
    4
])
output y, z
# CHECK-NOT: comment
# CHECK: {{^}}%x = input {name = "x"} : f32[8, 16] shard(dp, _){{$}}
# CHECK-NEXT: {{^}}%w = param {name = "w", init = normal(0.02)} : f32[16, 16] shard(_, tp){{$}}
# CHECK-NEXT: [[M:%[0-9]+]] = matmul %x, %w : f32[8, 16]
# CHECK-NEXT: [[C:%[0-9]+]] = const {value = 1.0} : f32[]
# CHECK-NEXT: [[A:%[0-9]+]] = add [[M]], [[C]] : f32[8, 16]
# CHECK-NEXT: {{^}}%y = gelu [[A]] : f32[8, 16]{{$}}
# CHECK-NEXT: {{^}}%z = reshape %y {shape = [32, 4]} : f32[32, 4]{{$}}
# CHECK-NEXT: {{^}}output "y" = %y{{$}}
# CHECK-NEXT: {{^}}output "z" = %z{{$}}
# CHECK-NOT: {{.}}
