# A value split over dp on dim 0, then constrained to dim 1: exactly one
# all_to_all, of the local buffer ((B / dp) x D elements).
# RUN: %shardc %s --mesh 2 --report json | FileCheck %s --check-prefix=DP2
# RUN: %shardc %s --mesh 4 --report json | FileCheck %s --check-prefix=DP4
# RUN: %shardc %s --mesh 4 --emit sharded-ir | FileCheck %s --check-prefix=IR
# DP2: "bytes_sent": 65536, "collectives": [{"kind": "all_to_all", "axes": ["dp"], "dtype": "f32", "elements": 32768, "phase": "forward"}]}]}
# DP4: "bytes_sent": 49152, "collectives": [{"kind": "all_to_all", "axes": ["dp"], "dtype": "f32", "elements": 16384, "phase": "forward"}]}]}
# IR: %x = input {name = "x"} : f32[16, 1024] shard(dp, _)
# IR-NEXT: %y = all_to_all %x {dim = 1, dim2 = 0, axes = [dp]} : f32[64, 256] shard(_, dp)
mesh dp
let B = 64, D = 1024
input x : f32[B, D] shard(dp, _)
y = x shard(_, dp)
output y
