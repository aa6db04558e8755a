# attention and attn_probs over queries split along S (causal): the query
# positions, the last operand (i32), give the keys each row sees, j <=
# pos[i], instead of the local row aligned to the end; without the split
# the kernel keeps its own formula. A block takes rows of a head (flash
# style: keys in shared tiles, online softmax), the last rows first.
# RUN: %shardc %s --mesh 2 --emit cuda | FileCheck %s
mesh a
input q  : f32[2, 8, 4] shard(_, a, _)
input k  : f32[2, 8, 4]
input v  : f32[2, 8, 4]
param w  : f32[4, 4] = normal(0.5)
o = attention(q @ w, k, v, causal = true)
loss = mse(o, q)
u = attention(k, k, v, causal = true)
output o, u
train loss with sgd(lr = 0.1)
# CHECK: // [[ATT:k[0-9]+_attention]]: row kernel of attention over f32[2, 4, 4]
# CHECK-NEXT: //   %o = attention %{{[0-9]+}}, %k, %v, %{{[0-9]+}}
# CHECK-NEXT: // parameters: the operands p0 .. p3, the result p4
# CHECK: // a block per 128 / group query rows of a head, keys in shared tiles, online softmax
# CHECK: [[ATT]](
# CHECK-NEXT: const float *__restrict__ p0,
# CHECK-NEXT: const float *__restrict__ p1,
# CHECK-NEXT: const float *__restrict__ p2,
# CHECK-NEXT: const int *__restrict__ p3,
# CHECK-NEXT: float *__restrict__ p4)
# CHECK: const i64 h = bi / 1, i = (0 - bi % 1) * 128 + lr; // head, query row
# CHECK-NEXT: const bool live = i < 4;
# CHECK-NEXT: const i64 end = live ? min(max((i64)p3[i] + 1, (i64)0), (i64)8) : 0;
# CHECK: p4[(h * 4 + i) * 4 + col] = o[c * 4 + e] * inv;
# CHECK: // {{k[0-9]+}}_attention: row kernel of attention over f32[2, 8, 4]
# CHECK-NEXT: //   %u = attention %k, %k, %v
# CHECK-NEXT: // parameters: the operands p0 .. p2, the result p3
# CHECK: const i64 end = live ? min(max(i + 1, (i64)0), (i64)8) : 0;
# CHECK: // [[PROBS:k[0-9]+_attn_probs]]: row kernel of attn_probs over f32[2, 4, 8]
# CHECK-NEXT: //   %{{[0-9]+}} = attn_probs %{{[0-9]+}}, %k, %{{[0-9]+}}
# CHECK-NEXT: // parameters: the operands p0 .. p2, the result p3
# CHECK: const int *__restrict__ p2,
# CHECK-NEXT: float *__restrict__ p3)
# CHECK: const i64 end = live ? min(max((i64)p2[i] + 1, (i64)0), (i64)8) : 0;
# CHECK: ps[lr * 33 + jj] = j0 + jj < end ? expf(sc[jj] - m) * inv : 0.0f;
# CHECK: p3[(h * 4 + row) * 8 + j] = (j0 < kend ? ps[rr * 33 + jj] : 0.0f);
