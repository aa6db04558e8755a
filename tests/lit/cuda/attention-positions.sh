# attention and its backward over queries split along S (causal): the
# query positions, the last operand (i32), give the keys each row sees, j
# <= pos[i], instead of the local row aligned to the end; without the split
# the kernel keeps its own formula. A block takes rows of a head (flash
# style: keys in shared tiles, online softmax), the last rows first. o's
# backward takes its statistics from the forward (attn_lse in the
# forward's kernel, with the same positions; attn_delta), then attn_dv and
# attn_dq; r's, whose attention a recompute block returns, from attn_stats.
# RUN: %shardc %s --mesh 2 --emit cuda | FileCheck %s
mesh a
input q  : f32[2, 8, 4] shard(_, a, _)
input k  : f32[2, 8, 4]
input v  : f32[2, 8, 4]
param w  : f32[4, 4] = normal(0.5)
recompute block rb(x : f32[2, 8, 4], kk : f32[2, 8, 4], vv : f32[2, 8, 4]) -> f32[2, 8, 4] {
    param w2 : f32[4, 4] = normal(0.5)
    return attention(x @ w2, kk, vv, causal = true)
}
o = attention(q @ w, k, v, causal = true)
r = rb(q, k, v)
loss = mse(o, q) + mse(r, q)
u = attention(k, k, v, causal = true)
output o, u
train loss with sgd(lr = 0.1)
# CHECK: // [[ATT:k[0-9]+_attention_attn_lse]]: row kernel of attention and attn_lse over f32[2, 4, 4]
# CHECK-NEXT: //   %o = attention %{{[0-9]+}}, %k, %v, %[[P:[0-9]+]]
# CHECK-NEXT: //   %{{[0-9]+}} = attn_lse %{{[0-9]+}}, %k, %[[P]]
# CHECK-NEXT: // parameters: attention's operands p0 .. p3, its result p4, attn_lse's result p5
# CHECK: // a block per 128 / group query rows of a head, keys in shared tiles, online softmax; each row's log-sum-exp from its max and sum
# CHECK: [[ATT]](
# CHECK-NEXT: const float *__restrict__ p0,
# CHECK-NEXT: const float *__restrict__ p1,
# CHECK-NEXT: const float *__restrict__ p2,
# CHECK-NEXT: const int *__restrict__ p3,
# CHECK-NEXT: float *__restrict__ p4,
# CHECK-NEXT: float *__restrict__ p5)
# CHECK: const i64 h = bi / 1, i = (0 - bi % 1) * 128 + lr; // head, query row
# CHECK-NEXT: const bool live = i < 4;
# CHECK-NEXT: const i64 end = live ? min(max((i64)p3[i] + 1, (i64)0), (i64)8) : 0;
# CHECK: if (g == 0 && live) // the row's log-sum-exp
# CHECK-NEXT: p5[h * 4 + i] = end > 0 ? m + logf(l) : 0.0f;
# CHECK: p4[(h * 4 + i) * 4 + col] = o[c * 4 + e] * inv;
# CHECK: // {{k[0-9]+}}_attention: row kernel of attention over f32[2, 4, 4]
# CHECK-NEXT: //   %r = attention %{{[0-9]+}}, %k, %v, %{{[0-9]+}}
# CHECK: // {{k[0-9]+}}_attention: row kernel of attention over f32[2, 8, 4]
# CHECK-NEXT: //   %u = attention %k, %k, %v
# CHECK-NEXT: // parameters: the operands p0 .. p2, the result p3
# CHECK: const i64 end = live ? min(max(i + 1, (i64)0), (i64)8) : 0;
# CHECK: // [[ST:k[0-9]+_attn_stats]]: row kernel of attn_stats over f32[2, 4, 2]
# CHECK-NEXT: //   %{{[0-9]+}} = attn_stats %{{[0-9]+}}, %k, %v, %{{[0-9]+}}, %{{[0-9]+}}
# CHECK-NEXT: // parameters: the operands p0 .. p4, the result p5
# CHECK: const int *__restrict__ p4,
# CHECK-NEXT: float *__restrict__ p5)
# CHECK: const i64 end = live ? min(max((i64)p4[i] + 1, (i64)0), (i64)8) : 0;
# The keys' kernel (dv, a sum over the rank's query rows) reads each
# row's end of keys from the same positions.
# CHECK: // {{k[0-9]+}}_attn_dv: row kernel of attn_dv over f32[2, 8, 4]
# CHECK-NEXT: //   %{{[0-9]+}} = attn_dv %{{[0-9]+}}, %k, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}
# CHECK: es[ii] = row ? (int)min(max((i64)p4[i] + 1, (i64)0), (i64)8) : 0;
# CHECK: // {{k[0-9]+}}_attn_dq: row kernel of attn_dq over f32[2, 4, 4]
# CHECK-NEXT: //   %{{[0-9]+}} = attn_dq %{{[0-9]+}}, %k, %v, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}
# CHECK-NEXT: // parameters: the operands p0 .. p5, the result p6
# CHECK: const i64 end = live ? min(max((i64)p5[i] + 1, (i64)0), (i64)8) : 0;
# o's statistics: lse and the dot of o's and dy's rows, a row a lane (its
# 4 f32 one 16-byte vector), 32 rows a warp, those past the 8 left out
# CHECK: // {{k[0-9]+}}_attn_delta: row kernel of attn_delta over f32[2, 4, 2]
# CHECK-NEXT: //   %{{[0-9]+}} = attn_delta %o, %{{[0-9]+}}, %{{[0-9]+}}
# CHECK: // a row of a head a vector a lane (16 bytes), 8 warps a block, grid-stride; assumes 16-byte aligned buffers
# CHECK: const int lane = threadIdx.x % 32; // rows a warp: 32, lanes a row: 1
# CHECK: const bool in = row < 8; // the last warp's rows past the end: 0
# CHECK: const vec<float, 4> a = *reinterpret_cast<const vec<float, 4> *>(p0 + (h * 4 + i) * 4 + c);
# CHECK-NEXT: const vec<float, 4> b = *reinterpret_cast<const vec<float, 4> *>(p1 + (h * 4 + i) * 4 + c);
# CHECK: acc = fmaf(a.v[q], b.v[q], acc);
# CHECK: if (in) {
# CHECK-NEXT: p3[row * 2] = p2[row];
# CHECK-NEXT: p3[row * 2 + 1] = acc;
# CHECK: // {{k[0-9]+}}_attn_dv: row kernel of attn_dv over f32[2, 8, 4]
# CHECK: // {{k[0-9]+}}_attn_dq: row kernel of attn_dq over f32[2, 4, 4]
