# The kernels of a causal attention (and of its gradient's attn_lse,
# attn_delta, attn_dv and attn_dq; and of a recomputed one's attn_stats)
# over queries split along S compile with NVRTC and read the query
# positions, i32 [4], as their last operand; the plan validates and its
# CPU run matches the unsplit program (tests/diff/regress/ checks the
# values). attn_lse runs in the forward's kernel: the positions the
# backward makes again are made alike, so its statistics come from the
# forward.
# RUN: %shardc %S/../cuda/attention-positions.sh --mesh 2 --arch sm_80,sm_90 --emit schedule | FileCheck %s
# RUN: %shardc %S/../cuda/attention-positions.sh --mesh 2 --arch sm_80,sm_90 -o %t.plan
# RUN: %shardrun %t.plan --quiet --steps 2
# CHECK:      %[[S:[0-9]+]] = slice %{{[0-9]+}} {dim = 0, axes = [a]} : i32[4]
# CHECK-NEXT: %[[O:[0-9]+]] = attention %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %[[S]] {causal = true} : f32[2, 4, 4]
# CHECK-NEXT: %[[L:[0-9]+]] = attn_lse %{{[0-9]+}}, %{{[0-9]+}}, %[[S]] {causal = true} : f32[2, 4]    // kernel {{k[0-9]+}}_attention_attn_lse (row, grid 2, block 128, 1028 shared bytes): runs %[[O]], %[[L]]; reads %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %[[S]]; writes %[[O]], %[[L]]
# CHECK:      %[[ST:[0-9]+]] = attn_stats %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %[[S2:[0-9]+]] {causal = true} : f32[2, 4, 2]    // kernel {{k[0-9]+}}_attn_stats (row, grid 2, block 128, 1028 shared bytes): runs %[[ST]]; reads %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %[[S2]]; writes %[[ST]]
# CHECK-NEXT: %{{[0-9]+}} = attn_dv %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %[[ST]], %[[S2]] {causal = true} : f32[2, 8, 4]    // kernel {{k[0-9]+}}_attn_dv
# CHECK: %{{[0-9]+}} = attn_dq %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %[[ST]], %[[S2]] {causal = true} : f32[2, 4, 4]    // kernel {{k[0-9]+}}_attn_dq
# CHECK:      %[[D:[0-9]+]] = attn_delta %[[O]], %{{[0-9]+}}, %[[L]] : f32[2, 4, 2]    // kernel {{k[0-9]+}}_attn_delta (row, grid 1, block 256, 0 shared bytes): runs %[[D]]; reads %[[O]], %{{[0-9]+}}, %[[L]]; writes %[[D]]
# CHECK-NEXT: %{{[0-9]+}} = attn_dv %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %[[D]], %[[S3:[0-9]+]] {causal = true} : f32[2, 8, 4]    // kernel {{k[0-9]+}}_attn_dv
# CHECK: %{{[0-9]+}} = attn_dq %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %[[D]], %[[S3]] {causal = true} : f32[2, 4, 4]    // kernel {{k[0-9]+}}_attn_dq
