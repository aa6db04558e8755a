# Collectives over several axes at once: a dim split over the tuple
# (dp, tp) is gathered by one all_gather over [dp, tp]; a contraction split
# over (dp, tp) is resolved by one all_reduce over [dp, tp].
# RUN: %shardc %s --mesh 2x2 --emit sharded-ir | FileCheck %s
# RUN: %shardc %s --mesh 2x4 --report json | FileCheck %s --check-prefix=JSON
# CHECK: %x = input {name = "x"} : f32[4, 8] shard((dp, tp), _)
# CHECK-NEXT: %y = all_gather %x {dim = 0, axes = [dp, tp]} : f32[16, 8] shard(_, _)
# CHECK: %0 = matmul %a, %b : f32[4, 8] auto(_, _) partial(dp, tp)
# CHECK-NEXT: %z = all_reduce %0 {axes = [dp, tp]} : f32[4, 8] auto(_, _)
# CHECK: output "z" = %z
# (2x4: 7/8 x 128 x 4 = 448 gathered, 2 x 7/8 x 32 x 4 = 224 reduced)
# JSON: "bytes_sent": 672, "collectives": [{"kind": "all_gather", "axes": ["dp", "tp"], "dtype": "f32", "elements": 128, "phase": "forward"}, {"kind": "all_reduce", "axes": ["dp", "tp"], "dtype": "f32", "elements": 32, "phase": "forward"}]}]}
mesh dp, tp
input  x : f32[16, 8] shard((dp, tp), _)
y = x shard(_, _)
input  a : f32[4, 16] shard(_, (dp, tp))
input  b : f32[16, 8] shard((dp, tp), _)
z = a @ b
output y, z
