# RUN: %shardc %S/embed.model --mesh 2 -o %t.plan
# RUN: %shardc %S/embed.model --mesh 2 --emit schedule | FileCheck %s
# RUN: %shardrun %t.plan --seed 3 | FileCheck %s --check-prefix=OUT
# The plan's instruction list, as shardrun runs it.
# CHECK: mesh dp = 2
# CHECK-NEXT: // 2 ranks, 1 stage
# CHECK-NEXT: input "ids" : i32[4, 3] shard(dp, _)
# CHECK-NEXT: param "t" : f32[8, 2] shard(_, _)
# CHECK-NEXT: param "w" : f32[2, 2] shard(_, _)
# CHECK-NEXT: output "e" : f32[4, 3, 2] shard(dp, _, _) = %[[E:[0-9]+]]
# CHECK: stage 0 (every rank): 5 instructions
# CHECK-NEXT: %[[IDS:[0-9]+]] = input {name = "ids"} : i32[2, 3]
# CHECK-NEXT: %[[T:[0-9]+]] = param {name = "t"} : f32[8, 2]
# CHECK-NEXT: %[[W:[0-9]+]] = param {name = "w"} : f32[2, 2]
# CHECK-NEXT: %[[X:[0-9]+]] = embedding %[[T]], %[[IDS]] : f32[2, 3, 2]
# CHECK-NEXT: %[[E]] = matmul %[[X]], %[[W]] : f32[2, 3, 2]
# OUT-LABEL: mesh dp=2 (2 ranks, local, cpu)
# OUT: made from seed 3: ids, t, w
# OUT: step 1/1:
# OUT: outputs:
# OUT-NEXT: e f32[4, 3, 2]: mean
