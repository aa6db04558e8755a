/* cuda_ops.c: the kernels of single ops that a GPU needs one for outside
 * the fused groups (cg_cuda_op_kernel): transpose, iota, narrow and
 * concat, embedding and its gradient, the checks of split ids and labels
 * (check_ids, check_labels), attention and its backward (attn_stats,
 * attn_dq, attn_dk, attn_dv). */
#include "cuda_gen.h"
#include "runtime/plan/plan.h" /* rt_dropout_bits's threshold */

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- kernels of single ops ----
 *
 * The ops the fusion pass never groups but that need a kernel on the GPU
 * (a gather, a permutation, attention) get one of their own, standing for
 * their one instruction: transpose and embedding move elements (of any
 * dtype, as raw 2- or 4-byte words), iota counts, embedding_grad sums each
 * table row's gradients in index order (as the CPU backend does: one
 * thread per element of the table at a time, so no atomics and the same
 * bits in f32), attention, attn_probs and attention's backward are flash style
 * (rows in registers, the other side's rows in shared tiles; the forward
 * past the tiles' widths takes a block per query row). An id outside
 * the table makes the row NaN (so the rest of the step stays
 * deterministic) and is recorded in the module's error word, sh_error
 * (the helper X_ERROR): the runtime reads it after the step and fails
 * with the CPU backend's message (runtime/cuda/cuda_step.h). A division
 * of i32 by zero is recorded so too (its result 0). */

enum { BLOCK_OP = 256 };

static bool cg_attention_tiled(const ir_op *op);

bool cg_cuda_op_kernel(const ir_op *op)
{
    switch (op->code) {
    case IR_TRANSPOSE:
    case IR_EMBEDDING:
    case IR_IOTA:
    case IR_NARROW:
    case IR_CONCAT:
    case IR_SPLIT3:
    case IR_CHECK_IDS:
    case IR_CHECK_LABELS:
        return op->nres == 1;
    case IR_AMAX:
    case IR_SUM: /* of i32 (the fusion pass groups float reductions only) */
        return op->nres == 1 && op->nin == 1 && op->res[0]->type.dtype == IR_I32 &&
               op->in[0]->type.dtype == IR_I32;
    case IR_DIV: /* of i32 (the fusion pass groups float division only) */
        return op->nres == 1 && op->nin == 2 && op->res[0]->type.dtype == IR_I32 &&
               op->in[0]->type.dtype == IR_I32 && op->in[1]->type.dtype == IR_I32;
    case IR_EMBEDDING_GRAD:
    case IR_ATTENTION:
    case IR_ATTN_PROBS:
    case IR_DROPOUT:
        return op->nres == 1 && op->res[0]->type.dtype != IR_I32;
    case IR_ATTN_STATS:
    case IR_ATTN_DQ:
    case IR_ATTN_DK:
    case IR_ATTN_DV:
    case IR_ATTN_LSE: /* the tiled layout only: no kernel past its widths */
        return op->nres == 1 && op->res[0]->type.dtype != IR_I32 && cg_attention_tiled(op);
    case IR_ATTN_DELTA:
        return op->nres == 1;
    default:
        return false;
    }
}

/* The raw word of a dtype's size, for ops that only move elements. */
static const char *word(ir_dtype t)
{
    int s = ir_dtype_size(t);
    return s == 1 ? "unsigned char" : s == 2 ? "unsigned short" : "unsigned int";
}

/* A quiet NaN of float dtype t, as its raw word. */
static const char *nan_word(ir_dtype t)
{
    return t == IR_F16 ? "0x7e00u" : t == IR_BF16 ? "0x7fc0u" : "0x7fc00000u";
}

/* The grid-stride loop over n elements (e), its body from the caller. */
static void elementwise_loop(gen *G, cg_cuda_kernel *k, int64_t n)
{
    k->strategy = CG_CUDA_ELEMENTWISE;
    k->vec = 1;
    k->block = cg_clamp_block(n, BLOCK_OP);
    k->grid = cg_grid_for(n, k->block);
    cg_line(G, "const i64 stride = (i64)gridDim.x * blockDim.x;");
    cg_line(G, "for (i64 e = (i64)blockIdx.x * blockDim.x + threadIdx.x; e < %lld; e += stride) {",
         (long long)n);
    G->indent++;
}

/* transpose: element e of the result, its index digits from the last dim,
 * each a digit of input dim perm[i] (dims of size 1 skipped). Two shapes
 * of it move whole lines:
 * - the last dim stays last: runs of the last dim are contiguous on both
 *   sides, so a thread moves TR_BYTES-byte words (uint4, or smaller when
 *   the run's bytes do not divide), its digits computed once per word;
 * - the last dim moves: a block takes a 32 x 32 tile of (the input dim that
 *   becomes the result's last, the input's last) for one index of the other
 *   dims, read along the input's last dim and written along the result's
 *   last, through shared memory (a column of padding: no bank conflicts).
 * Anything else (no dims past one of size 1) takes the element loop. */
enum { TR_TILE = 32, TR_ROWS = 8, TR_BYTES = 16 };

/* The input's strides, and the result's dims without those of size 1:
 * kept[], their input dims from[], n of them. */
typedef struct tr_view {
    int64_t istr[IR_MAX_RANK], dim[IR_MAX_RANK], from[IR_MAX_RANK];
    int n;
} tr_view;

static tr_view tr_view_of(const ir_op *op)
{
    const ir_type *x = &op->in[0]->type, *y = &op->res[0]->type;
    tr_view v = {.n = 0};
    int64_t acc = 1;
    for (int i = x->rank - 1; i >= 0; i--) {
        v.istr[i] = acc;
        acc *= x->dim[i];
    }
    for (int i = 0; i < y->rank; i++)
        if (y->dim[i] != 1) {
            v.dim[v.n] = y->dim[i];
            v.from[v.n++] = op->a->list[i];
        }
    return v;
}

/* The input's last dim with more than one element, or -1. */
static int tr_in_last(const ir_type *x)
{
    for (int i = x->rank - 1; i >= 0; i--)
        if (x->dim[i] != 1)
            return i;
    return -1;
}

/* The digit loop: src += the input offset of result element r's digits
 * (from the last kept dim to first, skipping skip), r consumed. */
static void tr_digits(gen *G, const tr_view *v, int skip)
{
    for (int i = v->n - 1; i >= 0; i--) {
        if (i == skip)
            continue;
        cg_line(G, "src += (r %% %lld) * %lld; // result dim %d is input dim %lld",
                (long long)v->dim[i], (long long)v->istr[v->from[i]], i, (long long)v->from[i]);
        cg_line(G, "r /= %lld;", (long long)v->dim[i]);
    }
}

static const char *tr_word(int bytes)
{
    return bytes == 16 ? "uint4" : bytes == 8 ? "uint2" : bytes == 4 ? "unsigned int"
                                                                  : "unsigned short";
}

static void emit_transpose(gen *G, cg_cuda_kernel *k, const ir_op *op)
{
    const ir_type *x = &op->in[0]->type, *y = &op->res[0]->type;
    tr_view v = tr_view_of(op);
    int es = ir_dtype_size(y->dtype), last = tr_in_last(x);
    int64_t n = ir_type_numel(y);
    if (v.n == 0 || last < 0) { /* one element */
        elementwise_loop(G, k, n);
        cg_line(G, "p1[e] = p0[e];");
        G->indent--;
        cg_line(G, "}");
        return;
    }
    if (v.from[v.n - 1] == last) { /* the last dim stays last: words */
        int64_t run = v.dim[v.n - 1] * es;
        int w = TR_BYTES;
        while (w > es && run % w)
            w /= 2;
        int per = w / es; /* elements per word */
        elementwise_loop(G, k, n / per);
        k->vec = per;
        cg_line(G, "// word e: elements e * %d .. e * %d + %d, a run of the last dim", per, per,
                per - 1);
        cg_line(G, "i64 r = e * %d, src = 0;", per);
        tr_digits(G, &v, -1);
        cg_line(G, "reinterpret_cast<%s *>(p1)[e] = reinterpret_cast<const %s *>(p0)[src / %d];",
                tr_word(w), tr_word(w), per);
        G->indent--;
        cg_line(G, "}");
        return;
    }
    /* the last dim moves: tiles of (a, l), a the input dim that becomes the
     * result's last, l the input's last (result dim kl) */
    int kl = -1;
    for (int i = 0; i < v.n; i++)
        if (v.from[i] == last)
            kl = i;
    int64_t na = v.dim[v.n - 1], nl = v.dim[kl], rest = n / (na * nl);
    int64_t ta = (na + TR_TILE - 1) / TR_TILE, tl = (nl + TR_TILE - 1) / TR_TILE;
    int64_t tiles = rest * ta * tl, ostr_l = 1;
    for (int i = v.n - 1; i > kl; i--)
        ostr_l *= v.dim[i];
    k->strategy = CG_CUDA_ROW;
    k->vec = 1;
    k->block = TR_TILE * TR_ROWS;
    k->grid = cg_grid_for(tiles, 1);
    k->shared_bytes = TR_TILE * (TR_TILE + 1) * es;
    cg_line(G, "extern __shared__ %s tile[]; // [%d][%d + 1]", word(y->dtype), TR_TILE, TR_TILE);
    cg_line(G, "const int tx = threadIdx.x %% %d, ty = threadIdx.x / %d;", TR_TILE, TR_TILE);
    cg_line(G, "for (i64 t = blockIdx.x; t < %lld; t += gridDim.x) {", (long long)tiles);
    G->indent++;
    int others = 0;
    for (int i = 0; i < v.n - 1; i++)
        others += i != kl;
    cg_line(G, "const i64 l0 = t %% %lld * %d, a0 = t / %lld %% %lld * %d;", (long long)tl, TR_TILE,
            (long long)tl, (long long)ta, TR_TILE);
    if (others == 0) {
        cg_line(G, "const i64 src = 0, dst = 0; // no other dims");
    } else {
        cg_line(G, "// the other dims' index r: the result's offset (a and l 0) and the input's");
        cg_line(G, "i64 r = t / %lld, src = 0, dst = 0;", (long long)(tl * ta));
        int64_t ostr = 1, ostrs[IR_MAX_RANK];
        for (int i = v.n - 1; i >= 0; i--) {
            ostrs[i] = ostr;
            ostr *= v.dim[i];
        }
        for (int i = v.n - 2, left = others; i >= 0; i--) {
            if (i == kl)
                continue;
            cg_line(G, "src += (r %% %lld) * %lld; // result dim %d is input dim %lld",
                    (long long)v.dim[i], (long long)v.istr[v.from[i]], i, (long long)v.from[i]);
            cg_line(G, "dst += (r %% %lld) * %lld;", (long long)v.dim[i], (long long)ostrs[i]);
            if (--left > 0)
                cg_line(G, "r /= %lld;", (long long)v.dim[i]);
        }
    }
    cg_line(G, "__syncthreads(); // the last tile is written out");
    cg_line(G, "for (int y = ty; y < %d; y += %d) { // read along the input's last dim", TR_TILE,
            TR_ROWS);
    cg_line(G, "    const i64 a = a0 + y, l = l0 + tx;");
    cg_line(G, "    if (a < %lld && l < %lld)", (long long)na, (long long)nl);
    cg_line(G, "        tile[y * %d + tx] = p0[src + a * %lld + l];", TR_TILE + 1,
            (long long)v.istr[v.from[v.n - 1]]);
    cg_line(G, "}");
    cg_line(G, "__syncthreads();");
    cg_line(G, "for (int y = ty; y < %d; y += %d) { // written along the result's last", TR_TILE,
            TR_ROWS);
    cg_line(G, "    const i64 l = l0 + y, a = a0 + tx;");
    cg_line(G, "    if (a < %lld && l < %lld)", (long long)na, (long long)nl);
    cg_line(G, "        p1[dst + l * %lld + a] = tile[tx * %d + y];", (long long)ostr_l,
            TR_TILE + 1);
    cg_line(G, "}");
    G->indent--;
    cg_line(G, "}");
}

static void emit_iota(gen *G, cg_cuda_kernel *k, const ir_op *op)
{
    elementwise_loop(G, k, ir_type_numel(&op->res[0]->type));
    cg_line(G, "p0[e] = (int)e;");
    G->indent--;
    cg_line(G, "}");
}

/* check_ids, check_labels (ids [..]): the ids copied; one outside [0,
 * bound) recorded in sh_error, whose lowest index the runtime reports as
 * the CPU backend does (its first), in embedding's or cross_entropy's
 * words. On the device, so that a step of a vocabulary-parallel model has
 * no host work in it. */
static void emit_check(gen *G, cg_cuda_kernel *k, const ir_op *op)
{
    G->helpers |= H_ERROR;
    elementwise_loop(G, k, ir_type_numel(&op->res[0]->type));
    cg_line(G, "const int id = p0[e];");
    cg_line(G, "if (id < 0 || id >= %lld)", (long long)op->a->bound);
    cg_line(G, "    sh_bad_id(e, id); // the runtime's error");
    cg_line(G, "p1[e] = id;");
    G->indent--;
    cg_line(G, "}");
}

/* amax and sum of i32 (index arithmetic: the first row of a rank's slice
 * of a split vocabulary is the amax of its row numbers): a thread per
 * result element, over the axis in order; sum wraps to 32 bits, as the
 * CPU backend's does (it sums in 64 bits and keeps the low 32: the same
 * bits). On the device, so that it splits no graph. */
static void emit_reduce_i32(gen *G, cg_cuda_kernel *k, const ir_op *op)
{
    const ir_type *t = &op->in[0]->type;
    int64_t axis = op->a->axis, outer = 1, inner = 1, n = t->dim[axis];
    for (int d = 0; d < t->rank; d++)
        if (d < axis)
            outer *= t->dim[d];
        else if (d > axis)
            inner *= t->dim[d];
    elementwise_loop(G, k, outer * inner);
    cg_line(G, "const i64 o = e / %lld, i = e %% %lld;", (long long)inner, (long long)inner);
    cg_line(G, "const int *x = p0 + o * %lld + i;", (long long)(n * inner));
    if (op->code == IR_AMAX) {
        cg_line(G, "int m = x[0];");
        cg_line(G, "for (i64 j = 1; j < %lld; j++)", (long long)n);
        cg_line(G, "    m = max(m, x[j * %lld]);", (long long)inner);
        cg_line(G, "p1[e] = m;");
    } else {
        cg_line(G, "unsigned s = 0u;");
        cg_line(G, "for (i64 j = 0; j < %lld; j++)", (long long)n);
        cg_line(G, "    s += (unsigned)x[j * %lld];", (long long)inner);
        cg_line(G, "p1[e] = (int)s;");
    }
    G->indent--;
    cg_line(G, "}");
}

/* div of i32 (index arithmetic), broadcasting as NumPy does: C's
 * truncating division, INT32_MIN / -1 giving INT32_MIN, as the CPU
 * backend's. A zero divisor gives 0 and is recorded in sh_error, whose
 * lowest result index the runtime reports in the CPU backend's words (its
 * first: it stops there). On the device, so that it splits no graph. */
static void emit_div_i32(gen *G, cg_cuda_kernel *k, const ir_op *op)
{
    const ir_type *t = &op->res[0]->type;
    G->helpers |= H_ERROR;
    elementwise_loop(G, k, ir_type_numel(t));
    cg_line(G, "const int x = p0[%s], y = p1[%s];", cg_offset(G, t, &op->in[0]->type, "e"),
            cg_offset(G, t, &op->in[1]->type, "e"));
    cg_line(G, "if (y == 0)");
    cg_line(G, "    sh_bad_id(e, 0); // the runtime's error");
    cg_line(G, "p2[e] = y == 0 ? 0 : x == (-2147483647 - 1) && y == -1 ? x : x / y;");
    G->indent--;
    cg_line(G, "}");
}

/* narrow and concat move elements: the result viewed as [outer, rows of
 * the dim, inner], element e's row r of its outer index o comes from the
 * operand holding r (concat: the operands one after another). */
static void emit_narrow_concat(gen *G, cg_cuda_kernel *k, const ir_op *op)
{
    const ir_type *t = &op->res[0]->type;
    int64_t inner = 1, dim = op->a->dim;
    for (int d = (int)dim + 1; d < t->rank; d++)
        inner *= t->dim[d];
    int64_t row = t->dim[dim] * inner;
    elementwise_loop(G, k, ir_type_numel(t));
    cg_line(G, "const i64 o = e / %lld, r = e %% %lld;", (long long)row, (long long)row);
    if (op->code == IR_NARROW) {
        int64_t from = op->in[0]->type.dim[dim] * inner;
        cg_line(G, "p1[e] = p0[o * %lld + %lld + r];", (long long)from,
                (long long)(op->a->offset * inner));
    } else {
        int64_t at = 0;
        for (int i = 0; i < op->nin; i++) {
            int64_t len = op->in[i]->type.dim[dim] * inner;
            if (i + 1 < op->nin)
                cg_line(G, "%sif (r < %lld) p%d[e] = p%d[o * %lld + r - %lld];", i ? "else " : "",
                        (long long)(at + len), op->nin, i, (long long)len, (long long)at);
            else
                cg_line(G, "else p%d[e] = p%d[o * %lld + r - %lld];", op->nin, i, (long long)len,
                        (long long)at);
            at += len;
        }
    }
    G->indent--;
    cg_line(G, "}");
}

/* split3: x viewed as [outer, K, inner] (K its dim), element e of it into
 * its parts [outer, 3, K, inner], h m l or, reversed, l m h (ops.def; the
 * arithmetic of the CPU backend's k_split3). Where a run of K x inner
 * divides by 4, a thread takes 4 elements: one 16-byte load, three 8-byte
 * stores (the buffers 256-byte aligned, every offset a multiple of 4
 * elements). */
static void emit_split3(gen *G, cg_cuda_kernel *k, const ir_op *op)
{
    const ir_type *t = &op->in[0]->type;
    int64_t inner = 1;
    for (int d = (int)op->a->dim + 1; d < t->rank; d++)
        inner *= t->dim[d];
    int64_t per = t->dim[op->a->dim] * inner, n = ir_type_numel(t);
    int vec = per % 4 == 0 ? 4 : 1;
    bool rev = op->a->reversed;
    elementwise_loop(G, k, n / vec);
    k->vec = vec;
    const char *at = "e";
    if (vec > 1) {
        G->helpers |= H_VEC;
        cg_line(G, "const i64 e4 = e * 4;");
        at = "e4";
    }
    cg_line(G, "const i64 o = %s / %lld, r = %s %% %lld;", at, (long long)per, at,
            (long long)per);
    if (vec > 1) {
        cg_line(G, "const vec<float, 4> x = *reinterpret_cast<const vec<float, 4> *>(p0 + e4);");
        cg_line(G, "vec<__nv_bfloat16, 4> ph, pm, pl;");
        cg_line(G, "#pragma unroll");
        cg_line(G, "for (int q = 0; q < 4; q++) {");
        G->indent++;
        cg_line(G, "const float v = x.v[q];");
    } else {
        cg_line(G, "const float v = p0[e];");
    }
    cg_line(G, "const __nv_bfloat16 h = __float2bfloat16_rn(v);");
    cg_line(G, "const float hf = __bfloat162float(h);");
    cg_line(G, "const float rest = fabsf(hf) <= 3.40282347e38f ? v - hf : 0.0f; // inf, NaN: h");
    cg_line(G, "const __nv_bfloat16 m = __float2bfloat16_rn(rest);");
    cg_line(G, "const __nv_bfloat16 l = __float2bfloat16_rn(rest - __bfloat162float(m));");
    const char *hoff = rev ? cg_fmt(G, "%lld", (long long)(2 * per)) : "0";
    const char *loff = rev ? "0" : cg_fmt(G, "%lld", (long long)(2 * per));
    if (vec > 1) {
        cg_line(G, "ph.v[q] = h;");
        cg_line(G, "pm.v[q] = m;");
        cg_line(G, "pl.v[q] = l;");
        G->indent--;
        cg_line(G, "}");
        cg_line(G, "__nv_bfloat16 *const q = p1 + o * %lld + r;", (long long)(3 * per));
        cg_line(G, "*reinterpret_cast<vec<__nv_bfloat16, 4> *>(q + %s) = ph;", hoff);
        cg_line(G, "*reinterpret_cast<vec<__nv_bfloat16, 4> *>(q + %lld) = pm;", (long long)per);
        cg_line(G, "*reinterpret_cast<vec<__nv_bfloat16, 4> *>(q + %s) = pl;", loff);
    } else {
        cg_line(G, "__nv_bfloat16 *const q = p1 + o * %lld + r;", (long long)(3 * per));
        cg_line(G, "q[%s] = h;", hoff);
        cg_line(G, "q[%lld] = m;", (long long)per);
        cg_line(G, "q[%s] = l;", loff);
    }
    G->indent--;
    cg_line(G, "}");
}

/* dropout (x, key[, pos...]): element e's global index mod 2^32 from its
 * coordinates (a pos operand's entry along a split dim, a microbatch's
 * rows offset along its dim) and the global strides, then
 * rt_dropout_bits (runtime/plan/plan.h) in CUDA C, the same arithmetic. */
static void emit_dropout(gen *G, cg_cuda_kernel *k, const ir_op *op)
{
    const ir_type *t = &op->in[0]->type;
    const ir_value *r = op->res[0];
    const ir_attrs *a = op->a;
    int pos[IR_MAX_RANK], np = 2;
    for (int d = 0; d < t->rank; d++)
        pos[d] = r->sh.naxes[d] ? np++ : -1;
    uint32_t stride[IR_MAX_RANK], s = 1;
    for (int d = t->rank - 1; d >= 0; d--) {
        stride[d] = s;
        s *= (uint32_t)a->list[d];
    }
    elementwise_loop(G, k, ir_type_numel(t));
    cg_line(G, "i64 r = e;");
    cg_line(G, "unsigned g = 0u;");
    for (int d = t->rank - 1; d >= 0; d--) {
        int64_t off = d == a->dim ? a->offset : 0;
        cg_line(G, "{ const i64 c = r %% %lld%s; r /= %lld; g += (unsigned)%s * %uu; }",
                (long long)t->dim[d], off ? cg_fmt(G, " + %lld", (long long)off) : "",
                (long long)t->dim[d], pos[d] >= 0 ? cg_fmt(G, "p%d[c]", pos[d]) : "c",
                (unsigned)stride[d]);
    }
    cg_line(G, "unsigned long long z = ((unsigned long long)(unsigned)p1[0] << 32 | %uull) + "
               "0x9e3779b97f4a7c15ull;", (unsigned)(uint32_t)a->tag);
    for (int round = 0; round < 2; round++) {
        cg_line(G, "z ^= z >> 30; z *= 0xbf58476d1ce4e5b9ull; z ^= z >> 27; "
                   "z *= 0x94d049bb133111ebull; z ^= z >> 31;");
        if (round == 0)
            cg_line(G, "z += (unsigned long long)g * 0x9e3779b97f4a7c15ull;");
    }
    const char *x = cg_load_conv(G, t->dtype, "p0[e]");
    const char *v = cg_fmt(G, "(unsigned)(z >> 40) < %uu ? 0.0f : %s * %s",
                           (unsigned)rt_dropout_threshold(a->value), x,
                           cg_f32_text(G, (float)(1.0 / (1.0 - a->value))));
    cg_line(G, "const float v = %s;", v);
    cg_line(G, "p%d[e] = %s;", op->nin, cg_store_conv(G, r->type.dtype, "v"));
    G->indent--;
    cg_line(G, "}");
}

/* embedding (table [V, D], ids): row ids[e / D] of the table, moved as
 * raw words: a 16-byte word a thread where a row is whole such words,
 * else an element a thread. */
static void emit_embedding(gen *G, cg_cuda_kernel *k, const ir_op *op)
{
    const ir_type *t = &op->in[0]->type;
    int64_t v = t->dim[0], d = t->dim[1], size = ir_dtype_size(t->dtype);
    G->helpers |= H_ERROR;
    if (d > 0 && (d * size) % 16 == 0) {
        /* a row of whole 16-byte words: a thread a word (GPT-2's rows of
         * 768 bf16, 96 words; a 2-byte element a thread wrote the bf16
         * GPT-2's 12.6 MB at about 0.8 TB/s in run 4) */
        int64_t w = d * size / 16, per = 4 / size; /* words a row, elements a 32-bit word */
        unsigned nan = (unsigned)strtoul(nan_word(t->dtype), NULL, 16);
        unsigned word = per == 2 ? nan << 16 | nan : nan;
        elementwise_loop(G, k, ir_type_numel(&op->res[0]->type) * size / 16);
        k->vec = (int)(16 / size);
        cg_line(G, "const i64 i = e / %lld; // the id's index (e: a 16-byte word)", (long long)w);
        cg_line(G, "const int id = p1[i];");
        cg_line(G, "const bool inside = id >= 0 && id < %lld;", (long long)v);
        cg_line(G, "if (!inside && e %% %lld == 0)", (long long)w);
        cg_line(G, "    sh_bad_id(i, id); // the runtime's error; the row is NaN meanwhile");
        cg_line(G, "reinterpret_cast<uint4 *>(p2)[e] = inside ? reinterpret_cast<const uint4 "
                   "*>(p0)[(i64)id * %lld + e %% %lld] : make_uint4(0x%xu, 0x%xu, 0x%xu, 0x%xu);",
                (long long)w, (long long)w, word, word, word, word);
        G->indent--;
        cg_line(G, "}");
        return;
    }
    elementwise_loop(G, k, ir_type_numel(&op->res[0]->type));
    cg_line(G, "const i64 i = e / %lld; // the id's index", (long long)d);
    cg_line(G, "const int id = p1[i];");
    cg_line(G, "const bool inside = id >= 0 && id < %lld;", (long long)v);
    cg_line(G, "if (!inside && e %% %lld == 0)", (long long)d);
    cg_line(G, "    sh_bad_id(i, id); // the runtime's error; the row is NaN meanwhile");
    cg_line(G, "p2[e] = inside ? p0[(i64)id * %lld + e %% %lld] : %s;", (long long)d, (long long)d,
         nan_word(t->dtype));
    G->indent--;
    cg_line(G, "}");
}

/* embedding_grad (ids [n], dy [n, D]) -> [V, D]: element (row, col) sums
 * dy[i, col] over the i with ids[i] == row, in index order from 0.0f, as
 * the CPU backend does (the same bits in f32). A block takes a unit: EG_ACC
 * / cols table rows and a chunk of 256 * cols columns (a thread's cols
 * columns, one a 256, for each of the rows: EG_ACC accumulators at most,
 * in registers). It reads the ids in tiles of EG_TILE, EG_PER a thread (a
 * run of them, so the block's threads hold a tile in index order); a
 * thread's ids of the unit's rows are counted, the counts summed over its
 * warp by shuffles and over the block through shared memory (each warp's
 * count, with whether it saw an id outside the table), and where the tile
 * has any, listed in shared memory in index order (their index in the
 * tile and their row): then every thread adds their dy to its
 * accumulators, one after another. Every block reads every id, so the
 * work is O(n D) for the gradient plus O(n V cols / EG_ACC) compares, and
 * a tile none of whose ids is the unit's costs one barrier. The warps'
 * counts alternate between two copies from tile to tile, so that a warp
 * may write the next tile's while another still reads this one's. An id
 * outside the table makes the whole table NaN (the CPU backend's error is
 * raised by the runtime from sh_error). */
enum { EG_ACC = 48, EG_PER = 4, EG_TILE = EG_PER * BLOCK_OP, EG_WARPS = BLOCK_OP / 32 };

static void emit_embedding_grad(gen *G, cg_cuda_kernel *k, const ir_op *op)
{
    const ir_type *y = &op->res[0]->type;
    int64_t v = y->dim[0], d = y->dim[1], n = ir_type_numel(&op->in[0]->type);
    ir_dtype dt = y->dtype;
    int64_t cols64 = (d + BLOCK_OP - 1) / BLOCK_OP;
    int cols = cols64 < 4 ? (int)cols64 : 4, rows = EG_ACC / cols;
    rows = v < rows ? (int)v : rows;
    int64_t width = (int64_t)BLOCK_OP * cols, chunks = (d + width - 1) / width;
    int64_t units = (v + rows - 1) / rows * chunks;
    G->helpers |= H_ERROR;
    k->strategy = CG_CUDA_ROW;
    k->vec = 1;
    k->block = BLOCK_OP;
    k->grid = cg_grid_for(units, 1);
    k->shared_bytes = (int)((2 * EG_TILE + 2 * EG_WARPS) * sizeof(int));
    cg_line(G, "extern __shared__ int sm[];");
    cg_line(G, "int *const hix = sm, *const hrow = sm + %d; // a tile's ids of the unit's rows: "
               "index in the tile, row", EG_TILE);
    cg_line(G, "int *const wc = sm + %d; // [2][%d]: each warp's count of them, + 2^30 if it saw "
               "an id outside the table", 2 * EG_TILE, EG_WARPS);
    cg_line(G, "const int lane = threadIdx.x %% 32, warp = threadIdx.x / 32;");
    cg_line(G, "int par = 0; // which copy of wc this tile's counts take");
    cg_line(G, "for (i64 u = blockIdx.x; u < %lld; u += gridDim.x) {", (long long)units);
    G->indent++;
    cg_line(G, "const int r0 = (int)(u / %lld) * %d; // the unit's rows r0 .. r0 + %d",
            (long long)chunks, rows, rows - 1);
    cg_line(G, "const i64 c0 = u %% %lld * %lld + threadIdx.x; // the thread's columns c0 + 256 c",
            (long long)chunks, (long long)width);
    cg_line(G, "float acc[%d][%d];", rows, cols);
    cg_line(G, "#pragma unroll");
    cg_line(G, "for (int a = 0; a < %d; a++)", rows);
    cg_line(G, "    #pragma unroll");
    cg_line(G, "    for (int c = 0; c < %d; c++)", cols);
    cg_line(G, "        acc[a][c] = 0.0f;");
    cg_line(G, "bool bad = false; // an id outside the table (the block's)");
    cg_line(G, "for (i64 t0 = 0; t0 < %lld; t0 += %d, par ^= 1) {", (long long)n, EG_TILE);
    G->indent++;
    cg_line(G, "int id[%d], cnt = 0;", EG_PER);
    cg_line(G, "bool mine_bad = false;");
    cg_line(G, "#pragma unroll");
    cg_line(G, "for (int e = 0; e < %d; e++) {", EG_PER);
    cg_line(G, "    const i64 i = t0 + threadIdx.x * %d + e;", EG_PER);
    cg_line(G, "    id[e] = i < %lld ? p0[i] : -1;", (long long)n);
    cg_line(G, "    if (i < %lld && (id[e] < 0 || id[e] >= %lld)) {", (long long)n, (long long)v);
    cg_line(G, "        mine_bad = true;");
    cg_line(G, "        if (u == 0)");
    cg_line(G, "            sh_bad_id(i, id[e]);");
    cg_line(G, "    }");
    cg_line(G, "    cnt += i < %lld && (unsigned)(id[e] - r0) < %du;", (long long)n, rows);
    cg_line(G, "}");
    cg_line(G, "int incl = cnt; // the warp's counts up to this lane's");
    cg_line(G, "#pragma unroll");
    cg_line(G, "for (int o = 1; o < 32; o <<= 1) {");
    cg_line(G, "    const int x = __shfl_up_sync(0xffffffffu, incl, o);");
    cg_line(G, "    if (lane >= o)");
    cg_line(G, "        incl += x;");
    cg_line(G, "}");
    cg_line(G, "const bool warp_bad = __any_sync(0xffffffffu, mine_bad);");
    cg_line(G, "if (lane == 31)");
    cg_line(G, "    wc[par * %d + warp] = incl + (warp_bad ? 1 << 30 : 0);", EG_WARPS);
    cg_line(G, "__syncthreads();");
    cg_line(G, "int total = 0, pos = incl - cnt;");
    cg_line(G, "#pragma unroll");
    cg_line(G, "for (int w = 0; w < %d; w++) {", EG_WARPS);
    cg_line(G, "    const int x = wc[par * %d + w];", EG_WARPS);
    cg_line(G, "    bad = bad || x >> 30;");
    cg_line(G, "    total += x & 0xffff;");
    cg_line(G, "    if (w < warp)");
    cg_line(G, "        pos += x & 0xffff;");
    cg_line(G, "}");
    cg_line(G, "if (total == 0)");
    cg_line(G, "    continue; // the same in every thread");
    cg_line(G, "#pragma unroll");
    cg_line(G, "for (int e = 0; e < %d; e++)", EG_PER);
    cg_line(G, "    if (t0 + threadIdx.x * %d + e < %lld && (unsigned)(id[e] - r0) < %du) {",
            EG_PER, (long long)n, rows);
    cg_line(G, "        hix[pos] = threadIdx.x * %d + e;", EG_PER);
    cg_line(G, "        hrow[pos++] = id[e] - r0;");
    cg_line(G, "    }");
    cg_line(G, "__syncthreads();");
    cg_line(G, "for (int x = 0; x < total; x++) { // in index order");
    G->indent++;
    cg_line(G, "const %s *const g = p1 + (t0 + hix[x]) * %lld;", cg_ctype(G, dt), (long long)d);
    cg_line(G, "const int row = hrow[x];");
    cg_line(G, "#pragma unroll");
    cg_line(G, "for (int c = 0; c < %d; c++) {", cols);
    G->indent++;
    cg_line(G, "if (c0 + c * %d < %lld) {", BLOCK_OP, (long long)d);
    cg_line(G, "    const float val = %s;",
            cg_load_conv(G, dt, cg_fmt(G, "g[c0 + c * %d]", BLOCK_OP)));
    cg_line(G, "    #pragma unroll");
    cg_line(G, "    for (int a = 0; a < %d; a++)", rows);
    cg_line(G, "        if (row == a)");
    cg_line(G, "            acc[a][c] += val;");
    cg_line(G, "}");
    G->indent--;
    cg_line(G, "}");
    G->indent--;
    cg_line(G, "}");
    G->indent--;
    cg_line(G, "}");
    cg_line(G, "#pragma unroll");
    cg_line(G, "for (int a = 0; a < %d; a++) {", rows);
    G->indent++;
    cg_line(G, "#pragma unroll");
    cg_line(G, "for (int c = 0; c < %d; c++)", cols);
    cg_line(G, "    if (r0 + a < %lld && c0 + c * %d < %lld)", (long long)v, BLOCK_OP,
            (long long)d);
    cg_line(G, "        p2[(i64)(r0 + a) * %lld + c0 + c * %d] = %s;", (long long)d, BLOCK_OP,
            cg_store_conv(G, dt, "(bad ? __int_as_float(0x7fc00000) : acc[a][c])"));
    G->indent--;
    cg_line(G, "}");
    G->indent--;
    cg_line(G, "}");
}

/* attention's, attn_probs' and the backward's shapes: per head (heads of
 * them) q [s, d], k [t, d], v [t, dv] (dv 0 for attn_probs and attn_lse; attn_dv's from
 * dy, its third operand), the query positions as the last operand when
 * pos, computed in dt's precision with scores scaled by 1 / sqrt(d). */
typedef struct at_view {
    int64_t s, d, t, dv, heads, grp; /* heads: q's; grp: ir_attn_group's */
    bool probs, pos;
    ir_dtype dt;
    float scale;
} at_view;

static at_view at_view_of(const ir_op *op)
{
    /* with the heads inner, the stored [.., S, H, d] as the [.., H, S, d] computed on */
    ir_type lq = ir_heads_in(op, 0) ? ir_type_swap_heads(&op->in[0]->type) : op->in[0]->type;
    ir_type lk = ir_heads_in(op, 1) ? ir_type_swap_heads(&op->in[1]->type) : op->in[1]->type;
    const ir_type *q = &lq;
    int r = q->rank;
    at_view v = {.s = q->dim[r - 2], .d = q->dim[r - 1], .t = lk.dim[r - 2],
                 .probs = op->code == IR_ATTN_PROBS, .dt = q->dtype};
    v.heads = ir_type_numel(q) / (v.s * v.d);
    v.grp = ir_attn_group(op);
    v.dv = v.probs || op->code == IR_ATTN_LSE ? 0 : op->in[2]->type.dim[r - 1];
    v.pos = op->nin == ir_ops[op->code].max_in;
    v.scale = (float)(1.0 / sqrt((double)v.d));
    return v;
}

/* The end of the keys query row i sees, [0, end): causal, pos[i] + 1 with
 * the query positions, else i + t - s + 1 (the mask aligned to the end,
 * as runtime/cpu/cpu_matmul.c's), clamped to [0, t]; else t. */
static const char *at_end(gen *G, const ir_op *op, const at_view *v)
{
    if (op->a->causal && v->pos)
        return cg_fmt(G, "min(max((i64)p%d[i] + 1, (i64)0), (i64)%lld)", op->nin - 1,
                      (long long)v->t);
    if (op->a->causal)
        return cg_fmt(G, "min(max(i + %lld, (i64)0), (i64)%lld)", (long long)(v->t - v->s + 1),
                      (long long)v->t);
    return cg_fmt(G, "%lld", (long long)v->t);
}

/* The offset of row r (of n per head, w wide) of head h in operand or
 * result pin: (h n + r) w, or with its heads inner (G->at_inner's bit pin;
 * G->at_heads = H, h = l H + hh), ((l n + r) H + hh) w. With groups
 * (G->at_grp > 1), an operand or result of the key heads (G->at_kv's bit
 * pin) is at key head hk = h / grp (the kernel's variable hk;
 * at_key_head) of G = H / grp. */
static const char *at_row(gen *G, int pin, int64_t n, const char *r, int64_t w)
{
    bool kv = G->at_grp > 1 && (G->at_kv >> pin & 1);
    const char *h = kv ? "hk" : "h";
    if (!(G->at_inner >> pin & 1))
        return cg_fmt(G, "(%s * %lld + %s) * %lld", h, (long long)n, r, (long long)w);
    long long H = (long long)(kv ? G->at_heads / G->at_grp : G->at_heads);
    return cg_fmt(G, "((%s / %lld * %lld + %s) * %lld + %s %% %lld) * %lld", h, H, (long long)n, r,
                  H, h, H, (long long)w);
}

/* The pin of a result named out ("p<pin>"). */
static int at_out_pin(const char *out)
{
    if (out[0] != 'p')
        su_unreachable();
    return atoi(out + 1);
}

/* With groups, the key head hk that query head h reads (at_row). */
static void at_key_head(gen *G)
{
    if (G->at_grp > 1)
        cg_line(G, "const i64 hk = h / %lld; // the key and value head", (long long)G->at_grp);
}

/* attn_dk's and attn_dv's block of key head hk: with groups, a loop over
 * the query heads h that read it, opened (closed by at_group_close). */
static void at_group_open(gen *G)
{
    if (G->at_grp <= 1)
        return;
    cg_line(G, "for (i64 h = hk * %lld; h < (hk + 1) * %lld; h++) { // the group's query heads",
            (long long)G->at_grp, (long long)G->at_grp);
    G->indent++;
}

static void at_group_close(gen *G)
{
    if (G->at_grp <= 1)
        return;
    G->indent--;
    cg_line(G, "}");
}

/* attention (q, k, v[, pos]) and attn_probs (q, k[, pos]) whose head width
 * is past the tiled kernel's (cg_attention_tiled): one block per
 * query row of a head: the scores q.k * scale of the keys it sees (causal:
 * j <= pos[i], or without pos the mask aligned to the end, as
 * runtime/cpu/cpu_matmul.c's), their softmax, then the row of p @ v, or of p. */
static void emit_attention(gen *G, cg_cuda_kernel *k, const ir_op *op)
{
    at_view v = at_view_of(op);
    int64_t s = v.s, d = v.d, t = v.t, heads = v.heads;
    bool probs = v.probs;
    int64_t dv = probs ? t : v.dv; /* the width of a result row */
    ir_dtype dt = v.dt;
    float scale = v.scale;
    k->strategy = CG_CUDA_ROW;
    k->vec = 1;
    k->block = cg_clamp_block(cg_pow2_at_least(t > dv ? t : dv), BLOCK_OP);
    k->grid = cg_grid_for(heads * s, 1);
    k->shared_bytes = (int)((t + k->block / 32) * (int64_t)sizeof(float));
    G->helpers |= H_WARP | H_BLOCK;
    const char *out = cg_fmt(G, "p%d", op->nin);
    cg_line(G, "extern __shared__ float sc[]; // the row's %lld scores, then one float per warp",
         (long long)t);
    cg_line(G, "float *red = sc + %lld;", (long long)t);
    cg_line(G, "for (i64 row = blockIdx.x; row < %lld; row += gridDim.x) {", (long long)(heads * s));
    G->indent++;
    cg_line(G, "const i64 h = row / %lld, i = row %% %lld;", (long long)s, (long long)s);
    at_key_head(G);
    cg_line(G, "const i64 end = %s; // keys [0, end)", at_end(G, op, &v));
    cg_line(G, "for (i64 j = threadIdx.x; j < end; j += blockDim.x) {");
    cg_line(G, "    float acc = 0.0f;");
    cg_line(G, "    for (i64 c = 0; c < %lld; c++)", (long long)d);
    cg_line(G, "        acc += %s * %s;", cg_load_conv(G, dt, cg_fmt(G, "p0[row * %lld + c]", (long long)d)),
         cg_load_conv(G, dt, cg_fmt(G, "p1[%s + c]", at_row(G, 1, t, "j", d))));
    cg_line(G, "    sc[j] = acc * %s;", cg_f32_text(G, scale));
    cg_line(G, "}");
    cg_line(G, "float mx = __int_as_float(0xff800000); // -inf");
    cg_line(G, "for (i64 j = threadIdx.x; j < end; j += blockDim.x)");
    cg_line(G, "    mx = fmaxf(mx, sc[j]);");
    cg_line(G, "mx = sh_block_max(mx, red);");
    cg_line(G, "float sum = 0.0f;");
    cg_line(G, "for (i64 j = threadIdx.x; j < end; j += blockDim.x) {");
    cg_line(G, "    sc[j] = expf(sc[j] - mx);");
    cg_line(G, "    sum += sc[j];");
    cg_line(G, "}");
    cg_line(G, "sum = sh_block_sum(sum, red); // also orders the writes to sc before the reads");
    cg_line(G, "const float inv = end > 0 ? 1.0f / sum : 0.0f;");
    if (probs) {
        cg_line(G, "for (i64 j = threadIdx.x; j < %lld; j += blockDim.x)", (long long)t);
        cg_line(G, "    %s[row * %lld + j] = %s;", out, (long long)t,
             cg_store_conv(G, dt, cg_round_to(G, dt, "(j < end ? sc[j] * inv : 0.0f)")));
    } else {
        cg_line(G, "for (i64 c = threadIdx.x; c < %lld; c += blockDim.x) {", (long long)dv);
        cg_line(G, "    float acc = 0.0f;");
        cg_line(G, "    for (i64 j = 0; j < end; j++)");
        cg_line(G, "        acc += sc[j] * inv * %s;",
             cg_load_conv(G, dt, cg_fmt(G, "p2[%s + c]", at_row(G, 2, t, "j", dv))));
        cg_line(G, "    %s[row * %lld + c] = %s;", out, (long long)dv,
             cg_store_conv(G, dt, cg_round_to(G, dt, "acc")));
        cg_line(G, "}");
    }
    cg_line(G, "__syncthreads(); // sc is the next row's");
    G->indent--;
    cg_line(G, "}");
}

/* attention (q, k, v[, pos]) and attn_probs (q, k[, pos]), flash style:
 * no [S, T] buffer. A query row is AT_GROUP threads (a power of two, so
 * that each holds at most 16 of q's and of the result's columns in
 * registers: float4 chunks c * group + g, so a group's threads read
 * consecutive shared words); a block takes 128 / group consecutive rows of
 * one head, the last rows' blocks first (they see the most keys). The keys
 * and values a block's rows see come through shared memory a tile of kt
 * keys at a time, widened to f32 and zero-padded; a row's scores of a tile
 * (q . k by fused multiply-adds, summed over the group by shuffles, times
 * 1 / sqrt(d)) are kept in registers, and the running max m, sum l and
 * unnormalised row o are rescaled once per tile (online softmax). The
 * result is o / l, 0 for a row that sees no key (the CPU backend's
 * convention). attn_probs runs the keys twice: the max and sum first, then
 * each tile's probabilities exp(s - m) / l, staged in shared memory so that
 * a warp writes 32 consecutive keys of a row, and zeros past the block's
 * last key without computing them. Causal: row i sees keys j < end, end =
 * pos[i] + 1 with the query positions (the last operand), else i + T - S +
 * 1 (the mask aligned to the end, as runtime/cpu/cpu_matmul.c's). */
/* AT_UNROLL: the backward's loops over a tile's keys (attn_dq) or rows
 * (attn_dk, attn_dv), which keep no array indexed by them, unrolled this
 * far, not wholly: NVRTC's time on each kernel drops from 0.45 s to 0.14 s
 * (GPT-2's bf16 shapes, sm_90); the forward's and attn_stats' tiles keep
 * their scores in registers, so their loops unroll wholly. */
enum { AT_BLOCK = 128, AT_KT = 32, AT_SHARED = 48 * 1024, AT_MAX_CHUNKS = 8, AT_UNROLL = 4 };

/* Threads per query row for width w: a power of two with w / (4 group)
 * chunks of 4 columns at most 4 (16 columns), at most 32. */
static int at_group(int64_t w)
{
    int g = 1;
    while (g < 32 && (w + 4 * g - 1) / (4 * g) > 4)
        g <<= 1;
    return g;
}

static bool cg_attention_tiled(const ir_op *op)
{
    at_view v = at_view_of(op);
    int64_t w = v.d > v.dv ? v.d : v.dv;
    int g = at_group(w);
    return (w + 4 * g - 1) / (4 * g) <= AT_MAX_CHUNKS;
}

/* Loads rows [r0, r0 + kt) of operand p (n rows of width w per head,
 * padded to pad) into the shared tile dst, widened to f32, zeros past n
 * or the width; r names the rows (j keys, i queries). */
static void at_load_tile(gen *G, const char *dst, int pin, char r, int64_t n, int64_t w,
                         int64_t pad, int kt, ir_dtype dt)
{
    cg_line(G, "for (int x = threadIdx.x; x < %lld; x += blockDim.x) {", (long long)(kt * pad));
    cg_line(G, "    const int %c%c = x / %lld, c = x %% %lld;", r, r, (long long)pad,
            (long long)pad);
    cg_line(G, "    const i64 %c = %c0 + %c%c;", r, r, r, r);
    cg_line(G, "    %s[x] = %c < %lld && c < %lld ? %s : 0.0f;", dst, r, (long long)n, (long long)w,
            cg_load_conv(G, dt, cg_fmt(G, "p%d[%s + c]", pin,
                                       at_row(G, pin, n, cg_fmt(G, "%c", r), w))));
    cg_line(G, "}");
}

/* A shared tile as its readers see it: name, its float4 chunk's name,
 * the variable of its row, the row's padded width and this thread's
 * chunks of it. */
typedef struct at_tile {
    const char *name, *chunk, *row;
    int64_t pad;
    int nc;
} at_tile;

/* The float acc = the dot product of the register row reg with the tile's
 * row (the thread's chunks by fused multiply-adds, then summed over the
 * group: every thread of the warp must come here). */
static void at_dot(gen *G, const char *acc, const char *reg, const at_tile *t, int group)
{
    cg_line(G, "float %s = 0.0f;", acc);
    cg_line(G, "#pragma unroll");
    cg_line(G, "for (int c = 0; c < %d; c++) {", t->nc);
    cg_line(G, "    const float4 %s = *(const float4 *)(%s + %s * %lld + (c * %d + g) * 4);",
            t->chunk, t->name, t->row, (long long)t->pad, group);
    for (int e = 0; e < 4; e++)
        cg_line(G, "    %s = fmaf(%s[c * 4%s], %s.%c, %s);", acc, reg,
                e ? cg_fmt(G, " + %d", e) : "", t->chunk, "xyzw"[e], acc);
    cg_line(G, "}");
    if (group > 1) {
        cg_line(G, "#pragma unroll");
        cg_line(G, "for (int sh = %d; sh > 0; sh >>= 1) // over the row's group: the same bits in "
                   "each", group / 2);
        cg_line(G, "    %s += __shfl_xor_sync(0xffffffffu, %s, sh);", acc, acc);
    }
}

/* The row's scores of the key tile into sc[] (-inf past end), and their
 * max, tmax. */
static void at_scores(gen *G, int kt, int nc, int group, int64_t dpad, float scale)
{
    at_tile ks = {"ks", "kk", "jj", dpad, nc};
    cg_line(G, "float sc[%d], tmax = __int_as_float(0xff800000);", kt);
    cg_line(G, "#pragma unroll");
    cg_line(G, "for (int jj = 0; jj < %d; jj++) {", kt);
    G->indent++;
    at_dot(G, "acc", "q", &ks, group);
    cg_line(G, "sc[jj] = j0 + jj < end ? acc * %s : __int_as_float(0xff800000);",
            cg_f32_text(G, scale));
    cg_line(G, "tmax = sc[jj] > tmax || sc[jj] != sc[jj] ? sc[jj] : tmax; // NaN wins");
    G->indent--;
    cg_line(G, "}");
}

/* acc[] += coef * the tile's row, over the thread's chunks. */
static void at_axpy(gen *G, const char *acc, const char *coef, const at_tile *t, int group)
{
    cg_line(G, "#pragma unroll");
    cg_line(G, "for (int c = 0; c < %d; c++) {", t->nc);
    cg_line(G, "    const float4 %s = *(const float4 *)(%s + %s * %lld + (c * %d + g) * 4);",
            t->chunk, t->name, t->row, (long long)t->pad, group);
    for (int e = 0; e < 4; e++) {
        const char *at = cg_fmt(G, "%s[c * 4%s]", acc, e ? cg_fmt(G, " + %d", e) : "");
        cg_line(G, "    %s = fmaf(%s, %s.%c, %s);", at, coef, t->chunk, "xyzw"[e], at);
    }
    cg_line(G, "}");
}

/* The register array name: this thread's chunks (nc) of operand p's row r
 * (n rows of width w per head), widened to f32, zeros past w or where the
 * row is not live. */
static void at_load_row(gen *G, const char *name, const char *what, int pin, const char *r,
                        int64_t n, int64_t w, int nc, int group, ir_dtype dt)
{
    cg_line(G, "float %s[%d]; // this thread's columns of %s", name, nc * 4, what);
    cg_line(G, "#pragma unroll");
    cg_line(G, "for (int c = 0; c < %d; c++)", nc);
    cg_line(G, "    #pragma unroll");
    cg_line(G, "    for (int e = 0; e < 4; e++) {");
    cg_line(G, "        const i64 col = (c * %d + g) * 4 + e;", group);
    cg_line(G, "        %s[c * 4 + e] = live && col < %lld ? %s : 0.0f;", name, (long long)w,
            cg_load_conv(G, dt, cg_fmt(G, "p%d[%s + col]", pin, at_row(G, pin, n, r, w))));
    cg_line(G, "    }");
}

/* The register array name of n zeros, this thread's columns of what. */
static void at_zero_row(gen *G, const char *name, int n, const char *what)
{
    cg_line(G, "float %s[%d]; // this thread's columns of %s", name, n, what);
    cg_line(G, "#pragma unroll");
    cg_line(G, "for (int c = 0; c < %d; c++)", n);
    cg_line(G, "    %s[c] = 0.0f;", name);
}

/* Writes row r of the result out (n rows of width w per head) from the
 * thread's chunks, each element val (of c and e) rounded once to dt. */
static void at_store_row(gen *G, const char *out, const char *r, int64_t n, int64_t w, int nc,
                         int group, ir_dtype dt, const char *val)
{
    cg_line(G, "if (live) {");
    G->indent++;
    cg_line(G, "#pragma unroll");
    cg_line(G, "for (int c = 0; c < %d; c++)", nc);
    cg_line(G, "    #pragma unroll");
    cg_line(G, "    for (int e = 0; e < 4; e++) {");
    cg_line(G, "        const i64 col = (c * %d + g) * 4 + e;", group);
    cg_line(G, "        if (col < %lld)", (long long)w);
    cg_line(G, "            %s[%s + col] = %s;", out, at_row(G, at_out_pin(out), n, r, w),
            cg_store_conv(G, dt, cg_round_to(G, dt, val)));
    cg_line(G, "    }");
    G->indent--;
    cg_line(G, "}");
}

/* The end of the keys the block's rows see, kend (every thread's end is
 * set; bend is the block's shared word). */
static void at_block_end(gen *G)
{
    cg_line(G, "__syncthreads(); // the last rows are done with bend and the tiles");
    cg_line(G, "if (threadIdx.x == 0)");
    cg_line(G, "    *bend = 0;");
    cg_line(G, "__syncthreads();");
    cg_line(G, "if (g == 0 && end > 0)");
    cg_line(G, "    atomicMax(bend, (int)end);");
    cg_line(G, "__syncthreads();");
    cg_line(G, "const i64 kend = *bend;");
}

/* attention or attn_probs; attention with lse, or attn_lse alone (lse into
 * its result), as emit_attention_mma's. */
static void emit_attention_tiled(gen *G, cg_cuda_kernel *k, const ir_op *op, const char *lse)
{
    at_view v = at_view_of(op);
    int64_t s = v.s, d = v.d, t = v.t, heads = v.heads, dv = v.dv;
    bool probs = v.probs, has_v = op->code == IR_ATTENTION;
    if (op->code == IR_ATTN_LSE)
        lse = cg_fmt(G, "p%d", op->nin);
    ir_dtype dt = v.dt;
    float scale = v.scale;
    int group = at_group(d > dv ? d : dv), rows = AT_BLOCK / group;
    int nc = (int)((d + 4 * group - 1) / (4 * group)), ncv = (int)((dv + 4 * group - 1) / (4 * group));
    int64_t dpad = (int64_t)nc * 4 * group, dvpad = (int64_t)ncv * 4 * group;
    int kt = AT_KT;
    int64_t shared;
    for (;;) {
        shared = (kt * (dpad + dvpad) + (probs ? rows * (kt + 1) : 0) + 1) * (int64_t)sizeof(float);
        if (shared <= AT_SHARED || kt <= 4)
            break;
        kt /= 2;
    }
    int64_t nqb = (s + rows - 1) / rows, total = heads * nqb;
    const char *out = cg_fmt(G, "p%d", op->nin);
    at_tile vs = {"vs", "vv", "jj", dvpad, ncv};
    k->strategy = CG_CUDA_ROW;
    k->vec = 1;
    k->block = AT_BLOCK;
    k->grid = cg_grid_for(total, 1);
    k->shared_bytes = (int)shared;
    cg_line(G, "extern __shared__ float sm[];");
    cg_line(G, "float *ks = sm; // [%d keys][%lld]", kt, (long long)dpad);
    if (has_v)
        cg_line(G, "float *vs = sm + %lld; // [%d keys][%lld]", (long long)(kt * dpad), kt,
                (long long)dvpad);
    else if (probs)
        cg_line(G, "float *ps = sm + %lld; // [%d rows][%d + 1]: a tile's probabilities",
                (long long)(kt * dpad), rows, kt);
    cg_line(G, "int *bend = (int *)(sm + %lld); // the block's last key + 1",
            (long long)(kt * (dpad + dvpad) + (probs ? rows * (kt + 1) : 0)));
    cg_line(G, "const int g = threadIdx.x %% %d, lr = threadIdx.x / %d; // slice and row in the block",
            group, group);
    cg_line(G, "for (i64 bi = blockIdx.x; bi < %lld; bi += gridDim.x) {", (long long)total);
    G->indent++;
    cg_line(G, "const i64 h = bi / %lld, i = (%lld - bi %% %lld) * %d + lr; // head, query row",
            (long long)nqb, (long long)(nqb - 1), (long long)nqb, rows);
    at_key_head(G);
    cg_line(G, "const bool live = i < %lld;", (long long)s);
    cg_line(G, "const i64 end = live ? %s : 0;", at_end(G, op, &v));
    at_block_end(G);
    at_load_row(G, "q", "the query row", 0, "i", s, d, nc, group, dt);
    cg_line(G, "float m = __int_as_float(0xff800000), l = 0.0f; // running max and sum");
    if (has_v)
        at_zero_row(G, "o", ncv * 4, "the unnormalised result");
    cg_line(G, "for (i64 j0 = 0; j0 < kend; j0 += %d) {", kt);
    G->indent++;
    cg_line(G, "__syncthreads(); // the last tile is read");
    at_load_tile(G, "ks", 1, 'j', t, d, dpad, kt, dt);
    if (has_v)
        at_load_tile(G, "vs", 2, 'j', t, dv, dvpad, kt, dt);
    cg_line(G, "__syncthreads();");
    at_scores(G, kt, nc, group, dpad, scale);
    cg_line(G, "const float mn = tmax > m || tmax != tmax ? tmax : m;");
    cg_line(G, "if (mn != __int_as_float(0xff800000)) { // else no key seen yet");
    G->indent++;
    cg_line(G, "const float alpha = expf(m - mn); // 0 while m is -inf");
    cg_line(G, "l *= alpha;");
    if (has_v) {
        cg_line(G, "#pragma unroll");
        cg_line(G, "for (int c = 0; c < %d; c++)", ncv * 4);
        cg_line(G, "    o[c] *= alpha;");
    }
    cg_line(G, "#pragma unroll");
    cg_line(G, "for (int jj = 0; jj < %d; jj++) {", kt);
    G->indent++;
    cg_line(G, "const float p = expf(sc[jj] - mn);");
    cg_line(G, "l += p;");
    if (has_v)
        at_axpy(G, "o", "p", &vs, group);
    G->indent--;
    cg_line(G, "}");
    cg_line(G, "m = mn;");
    G->indent--;
    cg_line(G, "}");
    G->indent--;
    cg_line(G, "}");
    if (lse) {
        cg_line(G, "if (g == 0 && live) // the row's log-sum-exp");
        cg_line(G, "    %s[h * %lld + i] = end > 0 ? m + logf(l) : 0.0f;", lse, (long long)s);
    }
    if (has_v) {
        cg_line(G, "const float inv = l > 0.0f ? 1.0f / l : 0.0f; // a row that sees no key is 0");
        at_store_row(G, out, "i", s, dv, ncv, group, dt, "o[c * 4 + e] * inv");
    } else if (probs) {
        cg_line(G, "const float inv = l > 0.0f ? 1.0f / l : 0.0f; // a row that sees no key is 0");
        cg_line(G, "for (i64 j0 = 0; j0 < %lld; j0 += %d) { // the probabilities, tile by tile",
                (long long)t, kt);
        G->indent++;
        cg_line(G, "__syncthreads(); // the last tile is read and written");
        cg_line(G, "if (j0 < kend) {");
        G->indent++;
        at_load_tile(G, "ks", 1, 'j', t, d, dpad, kt, dt);
        cg_line(G, "__syncthreads();");
        at_scores(G, kt, nc, group, dpad, scale);
        cg_line(G, "#pragma unroll");
        cg_line(G, "for (int jj = 0; jj < %d; jj++)", kt);
        cg_line(G, "    if (jj %% %d == g)", group);
        cg_line(G, "        ps[lr * %d + jj] = j0 + jj < end ? expf(sc[jj] - m) * inv : 0.0f;", kt + 1);
        G->indent--;
        cg_line(G, "}");
        cg_line(G, "__syncthreads();");
        cg_line(G, "for (int x = threadIdx.x; x < %d; x += blockDim.x) {", rows * kt);
        G->indent++;
        cg_line(G, "const int rr = x / %d, jj = x %% %d;", kt, kt);
        cg_line(G, "const i64 row = i - lr + rr, j = j0 + jj;");
        cg_line(G, "if (row < %lld && j < %lld)", (long long)s, (long long)t);
        cg_line(G, "    %s[(h * %lld + row) * %lld + j] = %s;", out, (long long)s, (long long)t,
                cg_store_conv(G, dt, cg_round_to(G, dt, cg_fmt(G, "(j0 < kend ? ps[rr * %d + jj] : 0.0f)", kt + 1))));
        G->indent--;
        cg_line(G, "}");
        G->indent--;
        cg_line(G, "}");
    }
    G->indent--;
    cg_line(G, "}");
}

/* The lanes attn_delta gives a row of width dv of dtype dt, each a
 * 16-byte vector a step (delta_vec): the row's vectors up to 32, where
 * they are a power of two or a multiple of 32; 0 where the row is not
 * whole vectors so (a lane a column then, emit_attn_delta's first form). */
static int delta_lanes(int64_t dv, ir_dtype dt)
{
    int64_t vec = 16 / ir_dtype_size(dt);
    if (dv <= 0 || dv % vec)
        return 0;
    int64_t n = dv / vec;
    if (n >= 32)
        return n % 32 ? 0 : 32;
    return (n & (n - 1)) ? 0 : (int)n;
}

/* attn_delta (y, dy, lse): a row of a head's products of y's and dy's
 * columns summed, [lse, the sum] written. Where the row is whole 16-byte
 * vectors (delta_lanes), L lanes take it, 32 / L rows a warp (GPT-2's
 * bf16 heads of 64: 8 lanes a row, 4 rows a warp), each lane a vector of
 * y and one of dy a step (its columns' products summed in order by fused
 * multiply-adds), then the L lanes' sums by shuffles within the row's
 * lanes; each row's first lane writes. A lane a column (a warp per row,
 * its lanes' 2-byte loads: the bf16 GPT-2's attn_delta read its 25 MB at
 * about 37% of the H200's bandwidth in run 4) where it is not. 8 warps a
 * block, grid-stride, the rows a warp takes warp-uniform so every lane
 * shuffles. With the heads inner, y and dy are stored [.., S, H, dv]
 * (G->at_heads). */
static void emit_attn_delta(gen *G, cg_cuda_kernel *k, const ir_op *op)
{
    ir_type ly = ir_heads_in(op, 0) ? ir_type_swap_heads(&op->in[0]->type) : op->in[0]->type;
    int r = ly.rank;
    int64_t s = ly.dim[r - 2], dv = ly.dim[r - 1];
    int64_t rows = s > 0 && dv > 0 ? ir_type_numel(&ly) / dv : 0;
    ir_dtype dt = ly.dtype;
    k->strategy = CG_CUDA_ROW;
    k->block = 256;
    int lanes = delta_lanes(dv, dt);
    if (lanes) {
        int vec = 16 / (int)ir_dtype_size(dt), per = 32 / lanes; /* rows a warp */
        const char *ct = cg_ctype(G, dt);
        G->helpers |= H_VEC;
        k->vec = vec;
        k->grid = cg_grid_for(rows, 8 * per);
        cg_line(G, "const int lane = threadIdx.x %% 32; // rows a warp: %d, lanes a row: %d", per,
                lanes);
        if (lanes > 1)
            cg_line(G, "const int part = lane %% %d; // the row's lane", lanes);
        cg_line(G, "for (i64 row0 = (blockIdx.x * 8 + threadIdx.x / 32) * %d; row0 < %lld; "
                   "row0 += (i64)gridDim.x * %d) {", per, (long long)rows, 8 * per);
        G->indent++;
        if (lanes > 1)
            cg_line(G, "const i64 row = row0 + lane / %d;", lanes);
        else
            cg_line(G, "const i64 row = row0 + lane;");
        cg_line(G, "const bool in = row < %lld; // the last warp's rows past the end: 0", (long long)rows);
        cg_line(G, "const i64 h = row / %lld, i = row %% %lld; // head, query row", (long long)s,
                (long long)s);
        cg_line(G, "float acc = 0.0f;");
        cg_line(G, "for (i64 c = %s; in && c < %lld; c += %d) {",
                lanes > 1 ? cg_fmt(G, "(i64)part * %d", vec) : "0", (long long)dv, vec * lanes);
        G->indent++;
        const char *at = at_row(G, 0, s, "i", dv);
        cg_line(G, "const vec<%s, %d> a = *reinterpret_cast<const vec<%s, %d> *>(p0 + %s + c);",
                ct, vec, ct, vec, at);
        cg_line(G, "const vec<%s, %d> b = *reinterpret_cast<const vec<%s, %d> *>(p1 + %s + c);",
                ct, vec, ct, vec, at);
        cg_line(G, "#pragma unroll");
        cg_line(G, "for (int q = 0; q < %d; q++)", vec);
        cg_line(G, "    acc = fmaf(%s, %s, acc);", cg_load_conv(G, dt, "a.v[q]"),
                cg_load_conv(G, dt, "b.v[q]"));
        G->indent--;
        cg_line(G, "}");
        if (lanes > 1) {
            cg_line(G, "#pragma unroll");
            cg_line(G, "for (int o = %d; o > 0; o >>= 1) // the row's lanes", lanes / 2);
            cg_line(G, "    acc += __shfl_xor_sync(0xffffffffu, acc, o);");
        }
        cg_line(G, "if (%s) {", lanes > 1 ? "in && part == 0" : "in");
        cg_line(G, "    p3[row * 2] = p2[row];");
        cg_line(G, "    p3[row * 2 + 1] = acc;");
        cg_line(G, "}");
        G->indent--;
        cg_line(G, "}");
        return;
    }
    k->vec = 1;
    k->grid = cg_grid_for(rows, 8);
    cg_line(G, "const int lane = threadIdx.x %% 32;");
    cg_line(G, "for (i64 row = blockIdx.x * 8 + threadIdx.x / 32; row < %lld; "
               "row += (i64)gridDim.x * 8) {", (long long)rows);
    G->indent++;
    cg_line(G, "const i64 h = row / %lld, i = row %% %lld; // head, query row", (long long)s,
            (long long)s);
    cg_line(G, "float acc = 0.0f;");
    cg_line(G, "for (i64 c = lane; c < %lld; c += 32)", (long long)dv);
    cg_line(G, "    acc = fmaf(%s, %s, acc);",
            cg_load_conv(G, dt, cg_fmt(G, "p0[%s + c]", at_row(G, 0, s, "i", dv))),
            cg_load_conv(G, dt, cg_fmt(G, "p1[%s + c]", at_row(G, 1, s, "i", dv))));
    cg_line(G, "#pragma unroll");
    cg_line(G, "for (int o = 16; o > 0; o >>= 1)");
    cg_line(G, "    acc += __shfl_xor_sync(0xffffffffu, acc, o);");
    cg_line(G, "if (lane == 0) {");
    cg_line(G, "    p3[row * 2] = p2[row];");
    cg_line(G, "    p3[row * 2 + 1] = acc;");
    cg_line(G, "}");
    G->indent--;
    cg_line(G, "}");
}

/* ---- attention on tensor cores ----
 *
 * attention (q, k, v[, pos]) and its backward (attn_stats, attn_dq,
 * attn_dk, attn_dv and their pair) of f16 or bf16 whose head widths are
 * multiples of 16 up to 128 (pass_attn_tensor_cores), on a GPU that has
 * WMMA for the dtype (pass_attn_tc_arch): flash style as the CUDA-core
 * kernels, with every product a WMMA 16 x 16 x 16 tile with f32
 * accumulators (the products of two 16-bit values are exact in f32). A
 * block is 4 warps, each owning 16 rows (query rows: attention,
 * attn_stats, attn_dq; key rows: attn_dk, attn_dv), the last query rows'
 * blocks first; the other side's rows come through shared tiles of 16-bit
 * values (zeros past the rows), 16 bytes a thread where the operands are
 * 16-byte aligned. The kernels use only what the WMMA API specifies:
 * fragments are loaded, stored, filled and multiplied, and an
 * accumulator's elements are touched only through a like fragment that
 * holds each element's row (loaded from a matrix of row numbers), so
 * nothing rests on how elements map to lanes.
 * - A warp's own rows (staged through its scratch) stay in fragments.
 * - The scores of a tile (q k^T, or k q^T by key rows) and dp (dy v^T,
 *   v dy^T) go into f32 fragments and through the warp's scratch, where
 *   two lanes a row read them and apply the mask and the softmax as the
 *   CUDA-core kernels do (the same NaN rules, online max and sums; a pair
 *   the mask hides takes no part in a statistic).
 * - A matrix of weights for a second product (p for p v and p^T dy, ds
 *   for ds k and ds^T q) is written back as two 16-bit matrices, hi = the
 *   weight rounded to the dtype and lo = the rest rounded, and both are
 *   multiplied: the weights keep about 16 bits, where the dtype alone
 *   would keep 8 or 11. A hidden pair's weight is 0, but its 0 times a
 *   NaN or infinity of the other operand is NaN on tensor cores, where
 *   the CUDA-core kernels leave the pair out.
 * - Sums stay in fragments, rescaled (the forward's online softmax) or
 *   scaled at the end, and are written through the scratch, each element
 *   rounded once to the dtype. */
enum { TC_WARPS = 4, TC_ROWS = 16 * TC_WARPS, TC_KT = 64, TC_PAD = 8, TC_OUT_LD = 20 };

/* The f32 kernels on mma.sync (cg_attention_x3) take each f32 x as three
 * bf16 parts, h = bf16(x), m = bf16(x - h), l = bf16(x - h - m) (each
 * difference exact in f32; about 24 bits in all), and a product x y as the
 * six products of parts whose ranks sum to at most 2, the smallest first:
 * within about 2^-22 of x y relatively, f32's products and sums to within a
 * few units of its last place. The tiles hold the parts side by side:
 * MMA_PART's names. */
enum { MMA_PARTS = 3 };
static const char *mma_part(gen *G, const char *name, int p)
{
    return p == 0 ? name : cg_fmt(G, "%s%s", name, p == 1 ? "_m" : "_l");
}

/* The six (a part, b part) pairs, the smallest products first. */
static const int mma_pairs[6][2] = {{2, 0}, {1, 1}, {0, 2}, {1, 0}, {0, 1}, {0, 0}};

bool cg_attention_wmma(const gen *G, const ir_op *op)
{
    int oldest = G->f && G->f->min_arch > 0 ? G->f->min_arch : 80;
    return pass_attn_tensor_cores(op) && oldest >= pass_attn_tc_arch(op) &&
           cg_attention_tiled(op);
}

/* Copies rows [base, base + rows) of operand pin (n rows of width w per
 * head, w a multiple of 8) into the shared 16-bit matrix dst (leading
 * dimension ld), zeros past n, by the threads from t0 in steps of step:
 * 16 bytes a thread. The operand's rows start 16-byte aligned: a buffer's
 * offset in the plan is a multiple of 256 (RT_ALIGN, which the plan
 * checks), as is every view a kernel is given, and a row starts a
 * multiple of w elements on. */
static void tc_stage(gen *G, const char *dst, int ld, int rows, const char *base, int pin,
                     int64_t n, int64_t w, const char *t0, int step)
{
    long long c8 = (long long)(w / 8);
    cg_line(G, "for (int x = %s; x < %lld; x += %d) {", t0, rows * c8, step);
    cg_line(G, "    const int rr = x / %lld, c = x %% %lld * 8;", c8, c8);
    cg_line(G, "    const i64 row = %s + rr;", base);
    cg_line(G, "    uint4 val = make_uint4(0u, 0u, 0u, 0u);");
    cg_line(G, "    if (row < %lld)", (long long)n);
    cg_line(G, "        val = *(const uint4 *)(p%d + %s + c);", pin, at_row(G, pin, n, "row", w));
    cg_line(G, "    *(uint4 *)(%s + rr * %d + c) = val;", dst, ld);
    cg_line(G, "}");
}

/* tc_stage by cp.async (sh_cp16, X_MMA): the rows' 16-byte words go to
 * shared memory without registers, zeros past n (a row past n reads
 * nothing; row 0 stands for its address). The thread commits and waits
 * for them itself (sh_cp_commit, sh_cp_wait_all), then a barrier. */
static void tc_stage_async(gen *G, const char *dst, int ld, int rows, const char *base, int pin,
                           int64_t n, int64_t w, const char *t0, int step)
{
    long long c8 = (long long)(w / 8);
    cg_line(G, "for (int x = %s; x < %lld; x += %d) {", t0, rows * c8, step);
    cg_line(G, "    const int rr = x / %lld, c = x %% %lld * 8;", c8, c8);
    cg_line(G, "    const i64 row = %s + rr;", base);
    cg_line(G, "    const bool in = row < %lld;", (long long)n);
    cg_line(G, "    sh_cp16(%s + rr * %d + c, p%d + %s + c, in);", dst, ld, pin,
            at_row(G, pin, n, "(in ? row : (i64)0)", w));
    cg_line(G, "}");
}

/* tc_stage for f32 rows as bf16 parts (cg_attention_x3): rows [base, base
 * + rows) of operand pin split (sh_split3), part p into the tile dst[p],
 * zeros past n: every part (part < 0), or part alone. 32 bytes read a
 * thread, 16 written a part. */
static void tc_stage_x3(gen *G, const char *const dst[MMA_PARTS], int ld, int rows,
                        const char *base, int pin, int64_t n, int64_t w, const char *t0,
                        int step, int part)
{
    long long c8 = (long long)(w / 8);
    cg_line(G, "for (int x = %s; x < %lld; x += %d) {", t0, rows * c8, step);
    G->indent++;
    cg_line(G, "const int rr = x / %lld, c = x %% %lld * 8;", c8, c8);
    cg_line(G, "const i64 row = %s + rr;", base);
    cg_line(G, "float4 f0 = make_float4(0.0f, 0.0f, 0.0f, 0.0f), f1 = f0;");
    cg_line(G, "if (row < %lld) {", (long long)n);
    cg_line(G, "    const float4 *const src = (const float4 *)(p%d + %s + c);", pin,
            at_row(G, pin, n, "row", w));
    cg_line(G, "    f0 = src[0];");
    cg_line(G, "    f1 = src[1];");
    cg_line(G, "}");
    cg_line(G, "uint4 part[3]; // hi, mid, lo");
    cg_line(G, "sh_split3(f0, f1, part[0], part[1], part[2]);");
    for (int p = 0; p < MMA_PARTS; p++)
        if (part < 0 || part == p)
            cg_line(G, "*(uint4 *)(%s + rr * %d + c) = part[%d];", dst[p], ld, p);
    G->indent--;
    cg_line(G, "}");
}

/* The largest tile of rows (64, else 32, else 16) whose shared bytes,
 * fixed + tile rows x per_row + 4 warps x a scratch of regions
 * (tc_region) and at least least bytes, fit AT_SHARED, rounded up to 128
 * bytes; its scratch and bytes. */
typedef struct tc_geom {
    int kt;
    int64_t ws, bytes;
} tc_geom;

static tc_geom tc_geom_of(int64_t per_row, int64_t fixed, int64_t least, int regions)
{
    tc_geom a = {.kt = TC_KT};
    for (;;) {
        /* a region: scores or dp [16][kt + 4] f32, or weights hi and lo [16][kt + 8] */
        int64_t f32 = 16 * (a.kt + 4) * 4, w16 = 2 * 16 * (a.kt + TC_PAD) * 2;
        a.ws = regions * (f32 > w16 ? f32 : w16);
        a.ws = a.ws > least ? a.ws : least;
        a.ws = a.ws > 16 * TC_OUT_LD * 4 ? a.ws : 16 * TC_OUT_LD * 4;
        a.bytes = (a.kt * per_row + TC_WARPS * a.ws + fixed + 127) / 128 * 128;
        if (a.bytes <= AT_SHARED || a.kt <= 16)
            return a;
        a.kt /= 2;
    }
}

/* The bytes of a scratch region (tc_geom_of's) for tiles of kt. */
static int64_t tc_region(int kt)
{
    int64_t f32 = 16 * (kt + 4) * 4, w16 = 2 * 16 * (kt + TC_PAD) * 2;
    return f32 > w16 ? f32 : w16;
}

/* k's geometry (4 warps a block, a block for each of total units of
 * work, grid-stride, a's shared bytes) and the declarations every WMMA
 * kernel starts with: the fragment types, the shared memory (bytes),
 * warp, lane, r (the lane's row of the warp's 16) and g (which half of a
 * tile's columns it takes), and rowof, the row of each element of an
 * accumulator (from rid, 256 floats at byte rid_at). */
static void tc_prologue(gen *G, cg_cuda_kernel *k, int64_t total, const tc_geom *a,
                        const char *T, int64_t rid_at)
{
    G->wmma = true;
    k->strategy = CG_CUDA_ROW;
    k->vec = 1;
    k->block = 32 * TC_WARPS;
    k->grid = cg_grid_for(total, 1);
    k->shared_bytes = (int)a->bytes;
    cg_line(G, "using namespace nvcuda;");
    cg_line(G, "typedef wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc_t;");
    cg_line(G, "typedef wmma::fragment<wmma::matrix_a, 16, 16, 16, %s, wmma::row_major> a_t;", T);
    cg_line(G, "typedef wmma::fragment<wmma::matrix_b, 16, 16, 16, %s, wmma::row_major> b_t;", T);
    cg_line(G, "typedef wmma::fragment<wmma::matrix_b, 16, 16, 16, %s, wmma::col_major> bt_t; // "
               "a row-major matrix read transposed", T);
    cg_line(G, "extern __shared__ __align__(128) float sm[]; // WMMA's pointers: 32-byte aligned");
    cg_line(G, "unsigned char *const smb = (unsigned char *)sm;");
    cg_line(G, "const int warp = threadIdx.x / 32, lane = threadIdx.x %% 32;");
    cg_line(G, "const int r = lane >> 1, g = lane & 1; // the lane's row of the warp's 16, and "
               "half of a tile's columns");
    cg_line(G, "float *const rid = (float *)(smb + %lld); // [16][16]: each element's row",
            (long long)rid_at);
    cg_line(G, "for (int x = threadIdx.x; x < 256; x += blockDim.x)");
    cg_line(G, "    rid[x] = (float)(x / 16);");
    cg_line(G, "__syncthreads();");
    cg_line(G, "acc_t rowof; // element e of an accumulator is in row rowof.x[e]");
    cg_line(G, "wmma::load_matrix_sync(rowof, rid, 16, wmma::mem_row_major);");
}

/* n fragments named frag[], zero. */
static void tc_zero(gen *G, const char *frag, int64_t n, const char *what)
{
    cg_line(G, "acc_t %s[%lld]; // %s, 16 columns a fragment", frag, (long long)n, what);
    cg_line(G, "#pragma unroll");
    cg_line(G, "for (int f = 0; f < %lld; f++)", (long long)n);
    cg_line(G, "    wmma::fill_fragment(%s[f], 0.0f);", frag);
}

/* The warp's 16 rows from row0 of operand pin (n rows of width w a head)
 * as w / 16 fragments frag[] (matrix_a), staged through stage (leading
 * dimension w + TC_PAD). */
static void tc_own_rows(gen *G, const char *frag, const char *stage, const char *row0, int pin,
                        int64_t n, int64_t w)
{
    int ld = (int)w + TC_PAD;
    tc_stage(G, stage, ld, 16, row0, pin, n, w, "lane", 32);
    cg_line(G, "__syncwarp();");
    cg_line(G, "a_t %s[%lld];", frag, (long long)(w / 16));
    cg_line(G, "#pragma unroll");
    cg_line(G, "for (int c = 0; c < %lld; c++)", (long long)(w / 16));
    cg_line(G, "    wmma::load_matrix_sync(%s[c], %s + c * 16, %d);", frag, stage, ld);
    cg_line(G, "__syncwarp(); // the stage is read");
}

/* dst [16][ld] f32 = own[] (16 rows of width w, fragments) times the
 * transpose of the shared tile tile ([cols][w + TC_PAD]): a score or dp of
 * each of the warp's rows and the tile's cols rows. */
static void tc_products(gen *G, const char *dst, int ld, const char *own, const char *tile, int cols,
                        int64_t w)
{
    int ldt = (int)w + TC_PAD;
    cg_line(G, "#pragma unroll 1 // no register array is indexed by n: NVRTC's time stays short");
    cg_line(G, "for (int n = 0; n < %d; n++) {", cols / 16);
    G->indent++;
    cg_line(G, "acc_t sf;");
    cg_line(G, "wmma::fill_fragment(sf, 0.0f);");
    cg_line(G, "#pragma unroll");
    cg_line(G, "for (int c = 0; c < %lld; c++) {", (long long)(w / 16));
    cg_line(G, "    bt_t b;");
    cg_line(G, "    wmma::load_matrix_sync(b, %s + n * %d + c * 16, %d);", tile, 16 * ldt, ldt);
    cg_line(G, "    wmma::mma_sync(sf, %s[c], b, sf);", own);
    cg_line(G, "}");
    cg_line(G, "wmma::store_matrix_sync(%s + n * 16, sf, %d, wmma::mem_row_major);", dst, ld);
    G->indent--;
    cg_line(G, "}");
}

/* The lane's weight x (an f32 expression) of column c of its row into the
 * 16-bit matrices hi and lo ([16][ld]): hi = x rounded, lo = x - hi
 * rounded. */
static void tc_put_weight(gen *G, const char *hi, const char *lo, int ld, const char *x,
                          ir_dtype dt)
{
    cg_line(G, "{");
    cg_line(G, "    const float w = %s;", x);
    cg_line(G, "    const %s wh = %s;", cg_ctype(G, dt), cg_store_conv(G, dt, "w"));
    cg_line(G, "    %s[r * %d + c] = wh;", hi, ld);
    cg_line(G, "    %s[r * %d + c] = %s;", lo, ld,
            cg_store_conv(G, dt, cg_fmt(G, "w - %s", cg_load_conv(G, dt, "wh"))));
    cg_line(G, "}");
}

/* Opens the loop over the lane's columns of its row in a tile (half of
 * them, from g * half): jj, and c the column; tc_lanes_close ends it. */
static void tc_lanes_open(gen *G, int half, const char *what)
{
    cg_line(G, "#pragma unroll");
    cg_line(G, "for (int jj = 0; jj < %d; jj++) {", half);
    G->indent++;
    cg_line(G, "const int c = g * %d + jj;%s", half, what ? cg_fmt(G, " // %s", what) : "");
}

static void tc_lanes_close(gen *G)
{
    G->indent--;
    cg_line(G, "}");
}

/* tmax, the lane's max of its half of the row, made the row's: the other
 * half's from the lane beside it (NaN wins). */
static void tc_row_max(gen *G)
{
    cg_line(G, "const float other = __shfl_xor_sync(0xffffffffu, tmax, 1); // the row's other half");
    cg_line(G, "tmax = other > tmax || other != other ? other : tmax;");
}

/* sum[] (fragments over w columns) += (hi + lo) times the shared tile
 * tile ([cols][w + TC_PAD]): the weights [16][ld] of the warp's rows and
 * the tile's cols rows. */
static void tc_weighted(gen *G, const char *sum, const char *hi, const char *lo, int ld,
                        const char *tile, int cols, int64_t w)
{
    int ldt = (int)w + TC_PAD;
    cg_line(G, "#pragma unroll 1 // as tc_products' n");
    cg_line(G, "for (int c = 0; c < %d; c++) {", cols / 16);
    G->indent++;
    cg_line(G, "a_t wh, wl;");
    cg_line(G, "wmma::load_matrix_sync(wh, %s + c * 16, %d);", hi, ld);
    cg_line(G, "wmma::load_matrix_sync(wl, %s + c * 16, %d);", lo, ld);
    cg_line(G, "#pragma unroll");
    cg_line(G, "for (int f = 0; f < %lld; f++) {", (long long)(w / 16));
    cg_line(G, "    b_t b;");
    cg_line(G, "    wmma::load_matrix_sync(b, %s + c * %d + f * 16, %d);", tile, 16 * ldt, ldt);
    cg_line(G, "    wmma::mma_sync(%s[f], wh, b, %s[f]);", sum, sum);
    cg_line(G, "    wmma::mma_sync(%s[f], wl, b, %s[f]);", sum, sum);
    cg_line(G, "}");
    G->indent--;
    cg_line(G, "}");
}

/* Writes sum[] (fragments over w columns), each element times factor (an
 * f32 expression that may read row, the element's row of the warp's 16),
 * to rows row0 .. of out (n rows of width w a head), rounded once to dt,
 * through stage ([16][TC_OUT_LD] f32). */
static void tc_write(gen *G, const char *sum, const char *factor, const char *stage,
                     const char *out, const char *row0, int64_t n, int64_t w, ir_dtype dt)
{
    cg_line(G, "#pragma unroll");
    cg_line(G, "for (int f = 0; f < %lld; f++) {", (long long)(w / 16));
    G->indent++;
    if (factor && strstr(factor, "row")) {
        cg_line(G, "for (int e = 0; e < %s[f].num_elements; e++) {", sum);
        cg_line(G, "    const int row = (int)rowof.x[e];");
        cg_line(G, "    %s[f].x[e] *= %s;", sum, factor);
        cg_line(G, "}");
    } else if (factor) {
        cg_line(G, "for (int e = 0; e < %s[f].num_elements; e++)", sum);
        cg_line(G, "    %s[f].x[e] *= %s;", sum, factor);
    }
    cg_line(G, "wmma::store_matrix_sync(%s, %s[f], %d, wmma::mem_row_major);", stage, sum,
            TC_OUT_LD);
    cg_line(G, "__syncwarp();");
    cg_line(G, "for (int x = lane; x < 256; x += 32) {");
    cg_line(G, "    const i64 row = %s + x / 16;", row0);
    cg_line(G, "    if (row < %lld)", (long long)n);
    cg_line(G, "        %s[%s + f * 16 + x %% 16] = %s;", out,
            at_row(G, at_out_pin(out), n, "row", w),
            cg_store_conv(G, dt, cg_round_to(G, dt, cg_fmt(G, "%s[x / 16 * %d + x %% 16]", stage,
                                                              TC_OUT_LD))));
    cg_line(G, "}");
    cg_line(G, "__syncwarp(); // the stage is read");
    G->indent--;
    cg_line(G, "}");
}


/* The loop over a block's 64 query rows of a head (the last rows' blocks
 * first), opened: h, q0 (the warp's first row), i (the lane's row), live,
 * end (of the keys it sees) and kend (the block's). */
static void tc_query_head(gen *G, const ir_op *op, const at_view *v, int64_t total)
{
    int64_t nqb = (v->s + TC_ROWS - 1) / TC_ROWS;
    cg_line(G, "for (i64 bi = blockIdx.x; bi < %lld; bi += gridDim.x) {", (long long)total);
    G->indent++;
    cg_line(G, "const i64 h = bi / %lld, q0 = (%lld - bi %% %lld) * %d + warp * 16; // head, the "
               "warp's first row",
            (long long)nqb, (long long)(nqb - 1), (long long)nqb, TC_ROWS);
    at_key_head(G);
    cg_line(G, "const i64 i = q0 + r;");
    cg_line(G, "const bool live = i < %lld;", (long long)v->s);
    cg_line(G, "const i64 end = live ? %s : 0;", at_end(G, op, v));
    at_block_end(G);
}

/* The shared tiles ks and vs of kt keys (rows of ldk and ldv 16-bit
 * values), from the shared memory's start. */
static void tc_key_decls(gen *G, const char *T, int kt, int ldk, int ldv)
{
    cg_line(G, "%s *const ks = (%s *)smb; // [%d keys][%d]: k's tile", T, T, kt, ldk);
    if (ldv) /* attn_lse has no v */
        cg_line(G, "%s *const vs = (%s *)(smb + %lld); // [%d keys][%d]: v's tile", T, T,
                (long long)kt * ldk * 2, kt, ldv);
}

/* The shared tiles ks and vs: kt keys from j0 of k (p1) and v (p2; none
 * where dv is 0, attn_lse's). */
static void tc_key_tiles(gen *G, const at_view *v, int kt)
{
    cg_line(G, "__syncthreads(); // the last tiles are read");
    tc_stage(G, "ks", (int)v->d + TC_PAD, kt, "j0", 1, v->t, v->d, "threadIdx.x", 32 * TC_WARPS);
    if (v->dv)
        tc_stage(G, "vs", (int)v->dv + TC_PAD, kt, "j0", 2, v->t, v->dv, "threadIdx.x",
                 32 * TC_WARPS);
    cg_line(G, "__syncthreads();");
}

/* attention, with lse or alone as attn_lse, as emit_attention_mma's. */
static void emit_attention_wmma(gen *G, cg_cuda_kernel *k, const ir_op *op, const char *lse)
{
    at_view v = at_view_of(op);
    int64_t s = v.s, d = v.d, heads = v.heads, dv = v.dv;
    bool has_v = op->code == IR_ATTENTION;
    if (!has_v)
        lse = cg_fmt(G, "p%d", op->nin);
    ir_dtype dt = v.dt;
    const char *T = cg_ctype(G, dt);
    int ldk = (int)d + TC_PAD, ldv = has_v ? (int)dv + TC_PAD : 0;
    tc_geom a = tc_geom_of((ldk + ldv) * 2, (TC_ROWS + 256 + 4) * 4, 16 * ldk * 2, 1);
    int kt = a.kt, ldp = kt + TC_PAD, lds = kt + 4, half = kt / 2;
    int64_t nqb = (s + TC_ROWS - 1) / TC_ROWS, total = heads * nqb;
    int64_t o_vs = (int64_t)kt * ldk * 2, o_ws = o_vs + (int64_t)kt * ldv * 2,
            o_al = o_ws + TC_WARPS * a.ws;
    tc_prologue(G, k, total, &a, T, o_al + TC_ROWS * 4);
    tc_key_decls(G, T, kt, ldk, ldv);
    cg_line(G, "// the warp's scratch: its q rows [16][%d], the scores [16][%d] f32, p's hi "
               "and lo [16][%d] each, or a result tile [16][%d] f32",
            ldk, lds, ldp, TC_OUT_LD);
    cg_line(G, "unsigned char *const wsb = smb + %lld + warp * %lld;", (long long)o_ws,
            (long long)a.ws);
    cg_line(G, "%s *const stg = (%s *)wsb; // the warp's own rows on their way in", T, T);
    cg_line(G, "float *const ss = (float *)wsb;");
    cg_line(G, "%s *const phi = (%s *)wsb, *const plo = (%s *)(wsb + %d);", T, T, T,
            16 * ldp * 2);
    cg_line(G, "float *const alpha = (float *)(smb + %lld) + warp * 16; // a row's factor",
            (long long)o_al);
    cg_line(G, "int *const bend = (int *)(smb + %lld); // the block's last key + 1",
            (long long)(o_al + (TC_ROWS + 256) * 4));
    tc_query_head(G, op, &v, total);
    tc_own_rows(G, "qf", "stg", "q0", 0, s, d);
    if (has_v)
        tc_zero(G, "of", dv / 16, "the unnormalised result");
    cg_line(G, "float m = __int_as_float(0xff800000), l = 0.0f; // the row's running max, the "
               "lane's sum");
    cg_line(G, "for (i64 j0 = 0; j0 < kend; j0 += %d) {", kt);
    G->indent++;
    tc_key_tiles(G, &v, kt);
    tc_products(G, "ss", lds, "qf", "ks", kt, d);
    cg_line(G, "__syncwarp();");
    cg_line(G, "float sc[%d], tmax = __int_as_float(0xff800000);", half);
    tc_lanes_open(G, half, NULL);
    cg_line(G, "sc[jj] = j0 + c < end ? ss[r * %d + c] * %s : __int_as_float(0xff800000);", lds,
            cg_f32_text(G, v.scale));
    cg_line(G, "tmax = sc[jj] > tmax || sc[jj] != sc[jj] ? sc[jj] : tmax; // NaN wins");
    tc_lanes_close(G);
    tc_row_max(G);
    cg_line(G, "__syncwarp(); // the scores are read: p goes over them");
    cg_line(G, "const float mn = tmax > m || tmax != tmax ? tmax : m;");
    cg_line(G, "float fac = 1.0f;");
    cg_line(G, "if (mn != __int_as_float(0xff800000)) { // else no key seen yet");
    cg_line(G, "    fac = expf(m - mn); // 0 while m is -inf");
    cg_line(G, "    l *= fac;");
    cg_line(G, "    m = mn;");
    cg_line(G, "}");
    tc_lanes_open(G, half, NULL);
    cg_line(G, "const float p = m != __int_as_float(0xff800000) ? expf(sc[jj] - m) : 0.0f;");
    cg_line(G, "l += p;");
    if (has_v)
        tc_put_weight(G, "phi", "plo", ldp, "p", dt);
    tc_lanes_close(G);
    if (has_v) {
        cg_line(G, "if (g == 0)");
        cg_line(G, "    alpha[r] = fac;");
        cg_line(G, "__syncwarp();");
        cg_line(G, "#pragma unroll");
        cg_line(G, "for (int f = 0; f < %lld; f++)", (long long)(dv / 16));
        cg_line(G, "    for (int e = 0; e < of[f].num_elements; e++)");
        cg_line(G, "        of[f].x[e] *= alpha[(int)rowof.x[e]];");
        tc_weighted(G, "of", "phi", "plo", ldp, "vs", kt, dv);
    }
    G->indent--;
    cg_line(G, "}");
    cg_line(G, "l += __shfl_xor_sync(0xffffffffu, l, 1); // the row's two halves");
    if (has_v) {
        cg_line(G, "__syncwarp(); // the last p is read");
        cg_line(G, "if (g == 0)");
        cg_line(G, "    alpha[r] = l > 0.0f ? 1.0f / l : 0.0f; // a row that sees no key is 0");
        cg_line(G, "__syncwarp();");
        tc_write(G, "of", "alpha[row]", "ss", cg_fmt(G, "p%d", op->nin), "q0", s, dv, dt);
    }
    if (lse) {
        cg_line(G, "if (g == 0 && live) // the row's log-sum-exp");
        cg_line(G, "    %s[h * %lld + i] = end > 0 ? m + logf(l) : 0.0f;", lse, (long long)s);
    }
    G->indent--;
    cg_line(G, "}");
}

/* attention on tensor cores through PTX (sm_80 on: mma.sync m16n8k16
 * and ldmatrix, the helpers of X_MMA), flash style with every score in
 * registers: the forward's blocks, tiles and rules are the WMMA kernel's
 * (above), but a warp's 16 rows of scores are the accumulators of its
 * products, so that lane l holds rows l / 4 and l / 4 + 8 of them, two
 * neighbouring columns of each 8. A row's max and sum are taken over its
 * lanes' columns, then over the 4 lanes of the row by shuffles. The
 * weights go back into the next product without shared memory: the
 * accumulators of two tiles of 8 columns are, pair by pair, the A
 * fragment of 16 columns (each pair packed into a register, rounded to
 * the dtype: mma_weights). v's tile is read transposed by ldmatrix.trans. */
bool cg_attention_mma(const gen *G, const ir_op *op)
{
    int oldest = G->f && G->f->min_arch > 0 ? G->f->min_arch : 80;
    return cg_attention_wmma(G, op) && oldest >= 80;
}

/* Whether f32 attention op (or its attn_lse) takes the kernel on mma.sync
 * with each f32 operand as three bf16 parts (MMA_PARTS): pass_attn_x3's
 * ops, every target sm_80 or newer. */
static bool cg_attention_x3(const gen *G, const ir_op *op)
{
    int oldest = G->f && G->f->min_arch > 0 ? G->f->min_arch : 80;
    return oldest >= 80 && pass_attn_x3(op) && cg_attention_tiled(op);
}


/* The end of the keys of row `row` (an expression of the warp's rows) into
 * name: at_end for that row, 0 past the s rows. */
static void mma_row_end(gen *G, const ir_op *op, const at_view *v, const char *name,
                        const char *row)
{
    cg_line(G, "i64 %s;", name);
    cg_line(G, "{");
    cg_line(G, "    const i64 i = %s;", row);
    cg_line(G, "    %s = i < %lld ? %s : 0;", name, (long long)v->s, at_end(G, op, v));
    cg_line(G, "}");
}

/* The loop over the weights w (an f32 expression of n, e: tile n of 8
 * columns, element e of its accumulator) of 16 columns kk, two at a time
 * into w2[2] as the A fragments' registers x take them, each computed once
 * and `each` (a statement, may be NULL) run after it with the value in w_;
 * then the statements put (nput of them), which make register x of the
 * fragments from w2. */
static void mma_weight_pairs(gen *G, const char *w, const char *each, const char *const *put,
                             int nput)
{
    cg_line(G, "#pragma unroll");
    cg_line(G, "for (int x = 0; x < 4; x++) {");
    G->indent++;
    cg_line(G, "const int n = 2 * kk + x / 2, e0 = x %% 2 * 2; // a0: rows g, a1: g + 8; a2, a3: "
               "the next 8 columns");
    cg_line(G, "float w2[2];");
    cg_line(G, "#pragma unroll");
    cg_line(G, "for (int y = 0; y < 2; y++) {");
    G->indent++;
    cg_line(G, "const int e = e0 + y;");
    cg_line(G, "const float w_ = %s;", w);
    if (each)
        cg_line(G, "%s", each);
    cg_line(G, "w2[y] = w_;");
    G->indent--;
    cg_line(G, "}");
    for (int i = 0; i < nput; i++)
        cg_line(G, "%s", put[i]);
    G->indent--;
    cg_line(G, "}");
}

/* The weights w of 16 columns kk (mma_weight_pairs) as an A fragment
 * wh[4], each rounded to dt (to nearest even), as FlashAttention and
 * cuDNN's fused attention round p and ds before their products: each
 * weight is within half a unit of dt's last place of its f32 value (2^-9
 * relatively in bf16), and so is the sum of products it makes, relative
 * to the sum of their magnitudes. The weights had been two fragments, the
 * rounded value and the rest rounded (about 16 bits), for twice the
 * products: the H200 ran GPT-2's forward and backward at 42 to 49% of the
 * issue slots with them (bench/results/gpt2-nvidia-h200.md, run 4). */
static void mma_weights(gen *G, const char *wh, const char *w, const char *each, ir_dtype dt)
{
    bool bf = dt == IR_BF16;
    const char *T2 = bf ? "__nv_bfloat162" : "__half2";
    const char *pack = bf ? "__floats2bfloat162_rn" : "__floats2half2_rn";
    const char *bits = bf ? "__bfloat16_as_ushort" : "__half_as_ushort";
    cg_line(G, "unsigned %s[4]; // the weights of columns 16 kk .. as an A fragment", wh);
    const char *put[] = {
        cg_fmt(G, "const %s h = %s(w2[0], w2[1]); // each rounded to nearest even", T2, pack),
        cg_fmt(G, "%s[x] = sh_pack2(%s(h.x), %s(h.y));", wh, bits, bits),
    };
    mma_weight_pairs(G, w, each, put, 2);
}

/* acc[cols / 8][4] += wh times the shared tile tile's 16 rows from
 * kk * 16 ([rows][ld], row-major 16-bit, read transposed by ldmatrix). */
static void mma_weighted(gen *G, const char *acc, const char *wh, const char *tile, int ld,
                         int64_t cols, const char *mma)
{
    cg_line(G, "#pragma unroll");
    cg_line(G, "for (int nn = 0; nn < %lld; nn++) {", (long long)(cols / 8));
    cg_line(G, "    unsigned b0, b1;");
    cg_line(G, "    sh_ldsm2t(b0, b1, %s + (kk * 16 + (lane & 15)) * %d + nn * 8);", tile, ld);
    cg_line(G, "    %s(%s[nn], %s, b0, b1);", mma, acc, wh);
    cg_line(G, "}");
}

/* acc[cols / 8][4] = own (A fragments, [w / 16][4]) times the transpose of
 * the shared tile tile ([cols][ld], row-major 16-bit): the scores, or dp,
 * of the warp's 16 rows and the tile's cols rows. */
static void mma_products_add(gen *G, const char *acc, const char *own, const char *tile, int ld,
                             int64_t cols, int64_t w, const char *mma);

static void mma_products(gen *G, const char *acc, const char *own, const char *tile, int ld,
                         int64_t cols, int64_t w, const char *mma)
{
    cg_line(G, "float %s[%lld][4];", acc, (long long)(cols / 8));
    cg_line(G, "#pragma unroll");
    cg_line(G, "for (int n = 0; n < %lld; n++)", (long long)(cols / 8));
    cg_line(G, "    %s[n][0] = %s[n][1] = %s[n][2] = %s[n][3] = 0.0f;", acc, acc, acc, acc);
    mma_products_add(G, acc, own, tile, ld, cols, w, mma);
}

static void mma_zero(gen *G, const char *acc, int64_t n, const char *what);

/* acc[cols / 8][4] += own times the transpose of tile, as mma_products
 * (acc declared and summed into already). */
static void mma_products_add(gen *G, const char *acc, const char *own, const char *tile, int ld,
                             int64_t cols, int64_t w, const char *mma)
{
    cg_line(G, "#pragma unroll");
    cg_line(G, "for (int c = 0; c < %lld; c++) {", (long long)(w / 16));
    cg_line(G, "    #pragma unroll");
    cg_line(G, "    for (int n = 0; n < %lld; n++) {", (long long)(cols / 8));
    cg_line(G, "        unsigned b0, b1;");
    cg_line(G, "        sh_ldsm2(b0, b1, %s + (n * 8 + (lane & 7)) * %d + c * 16 + (lane >> 3 & 1) * "
               "8);", tile, ld);
    cg_line(G, "        %s(%s[n], %s[c], b0, b1);", mma, acc, own);
    cg_line(G, "    }");
    cg_line(G, "}");
}

/* The scores (or dp) acc[cols / 8][4] of the warp's f32 rows, parts own[p]
 * (A fragments), and the f32 tile's rows, parts tile[p]: the six products
 * of mma_pairs, the smallest first, into acc declared here. */
static void mma_products_x3(gen *G, const char *acc, const char *own, const char *tile, int ld,
                            int64_t cols, int64_t w)
{
    mma_zero(G, acc, cols / 8, "the sums of the parts' products");
    for (int i = 0; i < 6; i++)
        mma_products_add(G, acc, mma_part(G, own, mma_pairs[i][0]),
                         mma_part(G, tile, mma_pairs[i][1]), ld, cols, w, "sh_mma_bf16");
}

/* The warp's 16 f32 rows from row0 of operand pin as the A fragments of
 * their bf16 parts, frag, frag_m and frag_l ([w / 16][4] each), each part
 * staged through stage in turn. */
static void mma_own_rows_x3(gen *G, const char *frag, const char *stage, const char *row0, int pin,
                            int64_t n, int64_t w)
{
    int ld = (int)w + TC_PAD;
    const char *st[MMA_PARTS] = {stage, stage, stage};
    for (int p = 0; p < MMA_PARTS; p++) {
        tc_stage_x3(G, st, ld, 16, row0, pin, n, w, "lane", 32, p);
        cg_line(G, "__syncwarp();");
        cg_line(G, "unsigned %s[%lld][4];", mma_part(G, frag, p), (long long)(w / 16));
        cg_line(G, "#pragma unroll");
        cg_line(G, "for (int c = 0; c < %lld; c++)", (long long)(w / 16));
        cg_line(G, "    sh_ldsm4(%s[c], %s + (lane & 15) * %d + c * 16 + (lane >> 4) * 8);",
                mma_part(G, frag, p), stage, ld);
        cg_line(G, "__syncwarp(); // the stage is read");
    }
}

/* mma_weights for f32: the weights w of 16 columns kk as the A fragments
 * of their three bf16 parts, wn, wn_m and wn_l. */
static void mma_weights_x3(gen *G, const char *wn, const char *w, const char *each)
{
    cg_line(G, "unsigned %s[4], %s[4], %s[4]; // the weights of columns 16 kk .., hi, mid, lo", wn,
            mma_part(G, wn, 1), mma_part(G, wn, 2));
    const char *put = cg_fmt(G, "sh_split3_2(w2[0], w2[1], %s[x], %s[x], %s[x]);", wn,
                             mma_part(G, wn, 1), mma_part(G, wn, 2));
    mma_weight_pairs(G, w, each, &put, 1);
}

/* mma_weighted for f32: acc[cols / 8][4] += the weights' parts (wn) times
 * the f32 tile's parts (tile, from row kk * 16, read transposed): the six
 * products of mma_pairs, the smallest first. */
static void mma_weighted_x3(gen *G, const char *acc, const char *wn, const char *tile, int ld,
                            int64_t cols)
{
    cg_line(G, "#pragma unroll");
    cg_line(G, "for (int nn = 0; nn < %lld; nn++) {", (long long)(cols / 8));
    G->indent++;
    cg_line(G, "unsigned b[3][2];");
    for (int p = 0; p < MMA_PARTS; p++)
        cg_line(G, "sh_ldsm2t(b[%d][0], b[%d][1], %s + (kk * 16 + (lane & 15)) * %d + nn * 8);", p,
                p, mma_part(G, tile, p), ld);
    for (int i = 0; i < 6; i++)
        cg_line(G, "sh_mma_bf16(%s[nn], %s, b[%d][0], b[%d][1]);", acc,
                mma_part(G, wn, mma_pairs[i][0]), mma_pairs[i][1], mma_pairs[i][1]);
    G->indent--;
    cg_line(G, "}");
}

/* The warp's 16 rows from row0 of operand pin (n rows of width w a head)
 * as A fragments frag[w / 16][4], staged through stage ([16][w + TC_PAD]). */
static void mma_own_rows(gen *G, const char *frag, const char *stage, const char *row0, int pin,
                         int64_t n, int64_t w)
{
    int ld = (int)w + TC_PAD;
    tc_stage(G, stage, ld, 16, row0, pin, n, w, "lane", 32);
    cg_line(G, "__syncwarp();");
    cg_line(G, "unsigned %s[%lld][4];", frag, (long long)(w / 16));
    cg_line(G, "#pragma unroll");
    cg_line(G, "for (int c = 0; c < %lld; c++)", (long long)(w / 16));
    cg_line(G, "    sh_ldsm4(%s[c], %s + (lane & 15) * %d + c * 16 + (lane >> 4) * 8);", frag, stage,
            ld);
    cg_line(G, "__syncwarp(); // the stage is read");
}

/* Writes acc[w / 8][4] (the warp's 16 rows from row0, w columns), row a's
 * elements times fa and row b's times fb, rounded once to dt, to out (n
 * rows of width w a head): a lane's two neighbouring columns as one 4-byte
 * store (w is a multiple of 16, and rows start 4-byte aligned). */
static void mma_write(gen *G, const char *acc, const char *fa, const char *fb, const char *out,
                      const char *row0, int64_t n, int64_t w, ir_dtype dt)
{
    cg_line(G, "#pragma unroll");
    cg_line(G, "for (int x = 0; x < 2; x++) {");
    G->indent++;
    cg_line(G, "const i64 row = %s + gr + x * 8;", row0);
    cg_line(G, "const float f = x ? %s : %s;", fb, fa);
    cg_line(G, "if (row < %lld) {", (long long)n);
    G->indent++;
    const char *T = cg_ctype(G, dt);
    const char *bits = dt == IR_BF16 ? "__bfloat16_as_ushort" : "__half_as_ushort";
    if (dt == IR_F32) { /* f32 (cg_attention_x3): the pair as one 8-byte store */
        cg_line(G, "#pragma unroll");
        cg_line(G, "for (int nn = 0; nn < %lld; nn++) { // two neighbouring columns in one store",
                (long long)(w / 8));
        cg_line(G, "    const int c = nn * 8 + tq * 2;");
        cg_line(G, "    *(float2 *)(%s + %s + c) = make_float2(%s[nn][x * 2] * f, %s[nn][x * 2 + 1] "
                   "* f);", out, at_row(G, at_out_pin(out), n, "row", w), acc, acc);
        cg_line(G, "}");
        G->indent--;
        cg_line(G, "}");
        G->indent--;
        cg_line(G, "}");
        return;
    }
    cg_line(G, "#pragma unroll");
    cg_line(G, "for (int nn = 0; nn < %lld; nn++) { // two neighbouring columns in one store",
            (long long)(w / 8));
    cg_line(G, "    const int c = nn * 8 + tq * 2;");
    cg_line(G, "    const %s y0 = %s;", T,
            cg_store_conv(G, dt, cg_round_to(G, dt, cg_fmt(G, "%s[nn][x * 2] * f", acc))));
    cg_line(G, "    const %s y1 = %s;", T,
            cg_store_conv(G, dt, cg_round_to(G, dt, cg_fmt(G, "%s[nn][x * 2 + 1] * f", acc))));
    cg_line(G, "    *(unsigned *)(%s + %s + c) = sh_pack2(%s(y0), %s(y1));", out,
            at_row(G, at_out_pin(out), n, "row", w), bits, bits);
    cg_line(G, "}");
    G->indent--;
    cg_line(G, "}");
    G->indent--;
    cg_line(G, "}");
}

/* The row-max step over the 4 lanes of a row: x made the max of theirs (NaN
 * wins). */
static void mma_quad_max(gen *G, const char *x)
{
    cg_line(G, "#pragma unroll");
    cg_line(G, "for (int o = 1; o <= 2; o <<= 1) {");
    cg_line(G, "    const float other = __shfl_xor_sync(0xffffffffu, %s, o);", x);
    cg_line(G, "    %s = sh_max_nan(%s, other);", x, x);
    cg_line(G, "}");
}

/* The scale of the scores in base 2, c log2(e), as an f32 literal: the
 * kernels on mma.sync take exp(s c - m) as exp2(s c log2(e) - m log2(e)),
 * a multiply-add and the multifunction unit's exp2. */
static const char *mma_c2(gen *G, const at_view *v)
{
    return cg_f32_text(G, (float)((double)v->scale * 1.4426950408889634));
}

/* Whether row a's or b's element e of tile n of 8 columns is seen: its
 * column n * 8 + 2 tq + (e & 1) of the tile is before ca (cb), the rows'
 * ends less the tile's first key and 2 tq (mma_tile_cols): a compare with
 * a constant once n and e are. */
#define MMA_SEEN "n * 8 + (e & 1) < (e < 2 ? ca : cb)"
#define MMA_LOG2E "1.44269504f"
#define MMA_LN2 "0.693147181f"

/* ca and cb of the tile of kt keys from j0 (MMA_SEEN), from the rows'
 * ends ea and eb. */
static void mma_tile_cols(gen *G, const char *ea, const char *eb, int kt)
{
    cg_line(G, "const int ca = (int)min(max(%s - j0, (i64)0), (i64)%d) - tq * 2, cb = (int)min(max(%s "
               "- j0, (i64)0), (i64)%d) - tq * 2; // MMA_SEEN", ea, kt, eb, kt);
}

/* The common start of the kernels on mma.sync: the block's geometry, the
 * shared memory (bytes), warp, lane, with rows (the kernels of query rows)
 * r and g (a row of the warp's 16 a pair of lanes, for the block's end of
 * keys), gr and tq (the fragments' row and column pair). */
static void mma_prologue(gen *G, cg_cuda_kernel *k, int64_t total, int64_t bytes, bool rows)
{
    G->helpers |= H_MMA;
    k->strategy = CG_CUDA_ROW;
    k->vec = 1;
    k->block = 32 * TC_WARPS;
    k->grid = cg_grid_for(total, 1);
    k->shared_bytes = (int)bytes;
    cg_line(G, "extern __shared__ __align__(128) float sm[]; // ldmatrix's rows: 16-byte aligned");
    cg_line(G, "unsigned char *const smb = (unsigned char *)sm;");
    cg_line(G, "const int warp = threadIdx.x / 32, lane = threadIdx.x %% 32;");
    if (rows) /* the kernels of query rows' block end (at_block_end) */
        cg_line(G, "const int r = lane >> 1, g = lane & 1; // a row of the warp's 16 a pair of "
                   "lanes");
    cg_line(G, "const int gr = lane >> 2, tq = lane & 3; // the fragments' rows gr and gr + 8, "
               "columns 2 tq and 2 tq + 1 of each 8");
}

/* acc[n][4], zero: a product's sums over n tiles of 8 columns. */
static void mma_zero(gen *G, const char *acc, int64_t n, const char *what)
{
    cg_line(G, "float %s[%lld][4]; // %s", acc, (long long)n, what);
    cg_line(G, "#pragma unroll");
    cg_line(G, "for (int nn = 0; nn < %lld; nn++)", (long long)n);
    cg_line(G, "    %s[nn][0] = %s[nn][1] = %s[nn][2] = %s[nn][3] = 0.0f;", acc, acc, acc, acc);
}

/* The shared tiles' two copies: ks0 and vs0, then ks1 and vs1, of kt keys
 * each (rows of ldk and ldv 16-bit values), from the shared memory's
 * start. */
static void mma_key_decls2(gen *G, const char *T, int kt, int ldk, int ldv)
{
    int64_t tk = (int64_t)kt * ldk * 2, tv = (int64_t)kt * ldv * 2;
    cg_line(G, "%s *const ks0 = (%s *)smb, *const ks1 = (%s *)(smb + %lld); // [%d keys][%d]: k's "
               "tiles", T, T, T, (long long)(tk + tv), kt, ldk);
    if (ldv) /* attn_lse has no v */
        cg_line(G, "%s *const vs0 = (%s *)(smb + %lld), *const vs1 = (%s *)(smb + %lld); // [%d "
                   "keys][%d]: v's tiles", T, T, (long long)tk, T, (long long)(2 * tk + tv), kt,
                ldv);
}

/* The async copies of the tiles of kt keys from base (an expression) of k
 * (p1) and v (p2, where dv is not 0) into copy c (0 or 1, an expression),
 * committed. */
static void mma_key_copy(gen *G, const at_view *v, int kt, const char *base, const char *c)
{
    tc_stage_async(G, cg_fmt(G, "(%s ? ks1 : ks0)", c), (int)v->d + TC_PAD, kt, base, 1, v->t,
                   v->d, "threadIdx.x", 32 * TC_WARPS);
    if (v->dv)
        tc_stage_async(G, cg_fmt(G, "(%s ? vs1 : vs0)", c), (int)v->dv + TC_PAD, kt, base, 2,
                       v->t, v->dv, "threadIdx.x", 32 * TC_WARPS);
    cg_line(G, "sh_cp_commit();");
}

/* Opens the loop over the block's tiles of kt keys, j0 their first, with
 * ks and vs this tile's in shared memory. With dbl, two copies: the first
 * tiles are copied before the loop, each next one's by cp.async while this
 * one is used (a barrier a tile); else each is staged at its turn between
 * two barriers (tc_key_tiles). The barrier before (at_block_end's) is past
 * the last unit's reads of the tiles. */
static void mma_key_loop(gen *G, const at_view *v, int kt, bool dbl)
{
    if (!dbl && v->dt == IR_F32) { /* the tiles' bf16 parts (cg_attention_x3) */
        cg_line(G, "for (i64 j0 = 0; j0 < kend; j0 += %d) {", kt);
        G->indent++;
        cg_line(G, "__syncthreads(); // the last tiles are read");
        const char *kn[MMA_PARTS], *vn[MMA_PARTS];
        for (int p = 0; p < MMA_PARTS; p++) {
            kn[p] = mma_part(G, "ks", p);
            vn[p] = mma_part(G, "vs", p);
        }
        tc_stage_x3(G, kn, (int)v->d + TC_PAD, kt, "j0", 1, v->t, v->d, "threadIdx.x",
                    32 * TC_WARPS, -1);
        if (v->dv)
            tc_stage_x3(G, vn, (int)v->dv + TC_PAD, kt, "j0", 2, v->t, v->dv, "threadIdx.x",
                        32 * TC_WARPS, -1);
        cg_line(G, "__syncthreads();");
        return;
    }
    if (!dbl) {
        cg_line(G, "for (i64 j0 = 0; j0 < kend; j0 += %d) {", kt);
        G->indent++;
        tc_key_tiles(G, v, kt);
        return;
    }
    const char *T = cg_ctype(G, v->dt);
    cg_line(G, "if (kend > 0) { // the first tiles on their way in, into copy 0");
    G->indent++;
    mma_key_copy(G, v, kt, "(i64)0", "0");
    G->indent--;
    cg_line(G, "}");
    cg_line(G, "for (i64 j0 = 0; j0 < kend; j0 += %d) {", kt);
    G->indent++;
    cg_line(G, "const int cur = (int)(j0 / %d) & 1; // this tile's copy", kt);
    cg_line(G, "%s *const ks = cur ? ks1 : ks0;", T);
    if (v->dv)
        cg_line(G, "%s *const vs = cur ? vs1 : vs0;", T);
    cg_line(G, "sh_cp_wait_all();");
    cg_line(G, "__syncthreads(); // this tile is in, and the other copy's (the last tile) read");
    cg_line(G, "if (j0 + %d < kend) { // the next tiles, while this one is used", kt);
    G->indent++;
    mma_key_copy(G, v, kt, cg_fmt(G, "j0 + %d", kt), "!cur");
    G->indent--;
    cg_line(G, "}");
}

/* The start of a kernel of query rows on mma.sync (the forward,
 * attn_stats and attn_dq): the key tile, kt from TC_KT halved while the
 * shared bytes (k's and v's tiles, each warp's stage of 16 rows of ld
 * 16-bit values, the block's end) pass AT_SHARED; the declarations, with
 * the stage named stage (what: its comment); the loop over the block's
 * query rows opened; the rows' ends ea and eb and the warp's, wend.
 * Returns kt. */
static int mma_rows_start(gen *G, cg_cuda_kernel *k, const ir_op *op, const at_view *v, int ldk,
                          int ldv, int ld, const char *stage, const char *what, bool *dbl)
{
    /* f32 (cg_attention_x3): the tiles' three bf16 parts side by side */
    int parts = v->dt == IR_F32 ? MMA_PARTS : 1;
    const char *T = parts > 1 ? "__nv_bfloat16" : cg_ctype(G, v->dt);
    int kt = TC_KT;
    int64_t bytes;
    for (;;) {
        bytes = (int64_t)parts * kt * (ldk + ldv) * 2 + TC_WARPS * 16 * ld * 2 + 128;
        if (bytes <= AT_SHARED || kt <= 16)
            break;
        kt /= 2;
    }
    /* two copies of the tiles where they fit beside the rest at this kt
     * (16-bit tiles, copied as they are) */
    int64_t tiles = (int64_t)parts * kt * (ldk + ldv) * 2;
    *dbl = parts == 1 && bytes + tiles <= AT_SHARED;
    int copies = *dbl ? 2 : 1;
    bytes += (copies - 1) * tiles;
    int64_t nqb = (v->s + TC_ROWS - 1) / TC_ROWS, total = v->heads * nqb;
    int64_t o_st = copies * tiles, o_be = o_st + TC_WARPS * 16 * ld * 2;
    mma_prologue(G, k, total, bytes, true);
    if (*dbl) {
        mma_key_decls2(G, T, kt, ldk, ldv);
    } else if (parts > 1) {
        G->bf16 = true;
        int64_t tk = (int64_t)kt * ldk * 2, tv = (int64_t)kt * ldv * 2;
        for (int p = 0; p < parts; p++) {
            cg_line(G, "%s *const %s = (%s *)(smb + %lld); // [%d keys][%d]: k's tile, part %d",
                    T, mma_part(G, "ks", p), T, (long long)(p * tk), kt, ldk, p);
            if (ldv) /* attn_lse has no v */
                cg_line(G, "%s *const %s = (%s *)(smb + %lld); // [%d keys][%d]: v's tile, part %d",
                        T, mma_part(G, "vs", p), T, (long long)(parts * tk + p * tv), kt, ldv, p);
        }
    } else {
        tc_key_decls(G, T, kt, ldk, ldv);
    }
    cg_line(G, "%s *const %s = (%s *)(smb + %lld) + warp * %d; // %s", T, stage, T,
            (long long)o_st, 16 * ld, what);
    cg_line(G, "int *const bend = (int *)(smb + %lld); // the block's last key + 1", (long long)o_be);
    tc_query_head(G, op, v, total);
    mma_row_end(G, op, v, "ea", "q0 + gr");
    mma_row_end(G, op, v, "eb", "q0 + gr + 8");
    cg_line(G, "int wend = (int)(ea > eb ? ea : eb); // the warp's last key + 1");
    cg_line(G, "#pragma unroll");
    cg_line(G, "for (int o = 4; o < 32; o <<= 1)");
    cg_line(G, "    wend = max(wend, __shfl_xor_sync(0xffffffffu, wend, o));");
    return kt;
}

/* A tile's scores sc (rows a and b of the warp's 16; with suffix x, those
 * named scx, eax, ebx, max, mbx, lax, lbx, oaccx): -inf where hidden
 * (mma_tile_cols from eax and ebx), the tile's max of each row over its
 * lanes, each row's running max moved to it and its sum rescaled (the
 * result oaccx too where has_v), then oa and ob, minus each row's max (0
 * while it sees no key), for its weights. */
static void mma_tile_max(gen *G, const at_view *v, int kt, const char *x, bool has_v)
{
    const char *ninf = "__int_as_float(0xff800000)";
    mma_tile_cols(G, cg_fmt(G, "ea%s", x), cg_fmt(G, "eb%s", x), kt);
    cg_line(G, "float ta = %s, tb = %s;", ninf, ninf);
    cg_line(G, "#pragma unroll");
    cg_line(G, "for (int n = 0; n < %d; n++) {", kt / 8);
    cg_line(G, "    #pragma unroll");
    cg_line(G, "    for (int e = 0; e < 4; e++) {");
    cg_line(G, "        const float x = %s ? sc%s[n][e] : %s; // the raw score, -inf where hidden",
            MMA_SEEN, x, ninf);
    cg_line(G, "        sc%s[n][e] = x;", x);
    cg_line(G, "        if (e < 2)");
    cg_line(G, "            ta = sh_max_nan(ta, x); // NaN wins");
    cg_line(G, "        else");
    cg_line(G, "            tb = sh_max_nan(tb, x);");
    cg_line(G, "    }");
    cg_line(G, "}");
    mma_quad_max(G, "ta");
    mma_quad_max(G, "tb");
    cg_line(G, "ta *= %s; // scaled, in base 2: s c log2(e)", mma_c2(G, v));
    cg_line(G, "tb *= %s;", mma_c2(G, v));
    cg_line(G, "float fa = 1.0f, fb = 1.0f;");
    cg_line(G, "{");
    cg_line(G, "    const float na = sh_max_nan(ma%s, ta), nb = sh_max_nan(mb%s, tb);", x, x);
    cg_line(G, "    if (na != %s) { // else no key seen yet", ninf);
    cg_line(G, "        fa = sh_exp2(ma%s - na); // 0 while m is -inf", x);
    cg_line(G, "        la%s *= fa;", x);
    cg_line(G, "        ma%s = na;", x);
    cg_line(G, "    }");
    cg_line(G, "    if (nb != %s) {", ninf);
    cg_line(G, "        fb = sh_exp2(mb%s - nb);", x);
    cg_line(G, "        lb%s *= fb;", x);
    cg_line(G, "        mb%s = nb;", x);
    cg_line(G, "    }");
    cg_line(G, "}");
    if (has_v) {
        cg_line(G, "#pragma unroll");
        cg_line(G, "for (int nn = 0; nn < %lld; nn++) {", (long long)(v->dv / 8));
        cg_line(G, "    oacc%s[nn][0] *= fa;", x);
        cg_line(G, "    oacc%s[nn][1] *= fa;", x);
        cg_line(G, "    oacc%s[nn][2] *= fb;", x);
        cg_line(G, "    oacc%s[nn][3] *= fb;", x);
        cg_line(G, "}");
    }
    cg_line(G, "// minus the max, 0 while no key is seen (every score -inf then: p = 0)");
    cg_line(G, "const float oa = ma%s == %s ? 0.0f : -ma%s, ob = mb%s == %s ? 0.0f : -mb%s;", x,
            ninf, x, x, ninf, x);
}

/* An experiment, off unless $SHARDC_EXPERIMENT_ATTN_ROWS is 32 when the
 * kernel is generated: the forward of a 16-bit attention (with its lse or
 * not) with 32 query rows a warp, two tiles of 16 (128 a block), where
 * emit_attention_mma has 16. Each fragment of k's tile (and of v's) that
 * ldmatrix reads from shared memory then feeds two products, one a tile
 * of rows, where it fed one: on the H200 (run 4) the forward ran at 49%
 * of the issue slots and 17% occupancy, its products waiting on shared
 * memory and each other (FlashAttention's forward keeps 32 rows a warp
 * for head widths of 64). Each row's scores, max, sums and result are
 * those of emit_attention_mma in the same order (every product, weight
 * and rescaling of a row the same), so the two give the same bits. Where
 * the tiles do not fit twice in AT_SHARED beside one warp's stage (head
 * widths past 64) or the dtype is f32 (parts), emit_attention_mma's. */
static bool attn_rows32(const ir_op *op, const at_view *v)
{
    const char *e = getenv("SHARDC_EXPERIMENT_ATTN_ROWS");
    if (!e || strcmp(e, "32") || op->code != IR_ATTENTION || v->dt == IR_F32)
        return false;
    int64_t ldk = v->d + TC_PAD, ldv = v->dv + TC_PAD;
    return 2 * (int64_t)TC_KT * (ldk + ldv) * 2 + TC_WARPS * 16 * ldk * 2 + 128 <= AT_SHARED;
}

static void emit_attention_mma2(gen *G, cg_cuda_kernel *k, const ir_op *op, const char *lse)
{
    at_view v = at_view_of(op);
    int64_t s = v.s, d = v.d, dv = v.dv;
    ir_dtype dt = v.dt;
    const char *ninf = "__int_as_float(0xff800000)";
    const char *mma = dt == IR_F16 ? "sh_mma_f16" : "sh_mma_bf16";
    const char *T = cg_ctype(G, dt);
    int ldk = (int)d + TC_PAD, ldv = (int)dv + TC_PAD, kt = TC_KT, rows = 32 * TC_WARPS;
    int64_t tiles = (int64_t)kt * (ldk + ldv) * 2;
    int64_t o_be = 2 * tiles + TC_WARPS * 16 * ldk * 2;
    int64_t nqb = (s + rows - 1) / rows, total = v.heads * nqb;
    mma_prologue(G, k, total, o_be + 128, false);
    mma_key_decls2(G, T, kt, ldk, ldv);
    cg_line(G, "%s *const qst = (%s *)(smb + %lld) + warp * %d; // the warp's q rows on their way "
               "in, 16 at a time", T, T, (long long)(2 * tiles), 16 * ldk);
    cg_line(G, "int *const bend = (int *)(smb + %lld); // the block's last key + 1", (long long)o_be);
    cg_line(G, "for (i64 bi = blockIdx.x; bi < %lld; bi += gridDim.x) {", (long long)total);
    G->indent++;
    cg_line(G, "const i64 h = bi / %lld, q0 = (%lld - bi %% %lld) * %d + warp * 32; // head, the "
               "warp's first row (its rows: two tiles of 16)",
            (long long)nqb, (long long)(nqb - 1), (long long)nqb, rows);
    at_key_head(G);
    cg_line(G, "const i64 i = q0 + lane;");
    cg_line(G, "const bool live = i < %lld;", (long long)s);
    cg_line(G, "const i64 end = live ? %s : 0;", at_end(G, op, &v));
    cg_line(G, "__syncthreads(); // the last rows are done with bend and the tiles");
    cg_line(G, "if (threadIdx.x == 0)");
    cg_line(G, "    *bend = 0;");
    cg_line(G, "__syncthreads();");
    cg_line(G, "if (end > 0)");
    cg_line(G, "    atomicMax(bend, (int)end);");
    cg_line(G, "__syncthreads();");
    cg_line(G, "const i64 kend = *bend;");
    static const char *const suf[2] = {"0", "1"};
    for (int t = 0; t < 2; t++) {
        mma_row_end(G, op, &v, cg_fmt(G, "ea%s", suf[t]), cg_fmt(G, "q0 + %d + gr", 16 * t));
        mma_row_end(G, op, &v, cg_fmt(G, "eb%s", suf[t]), cg_fmt(G, "q0 + %d + gr", 16 * t + 8));
    }
    cg_line(G, "int wend = (int)max(max(ea0, eb0), max(ea1, eb1)); // the warp's last key + 1");
    cg_line(G, "#pragma unroll");
    cg_line(G, "for (int o = 4; o < 32; o <<= 1)");
    cg_line(G, "    wend = max(wend, __shfl_xor_sync(0xffffffffu, wend, o));");
    for (int t = 0; t < 2; t++) {
        mma_own_rows(G, cg_fmt(G, "qa%s", suf[t]), "qst", cg_fmt(G, "q0 + %d", 16 * t), 0, s, d);
        mma_zero(G, cg_fmt(G, "oacc%s", suf[t]), dv / 8, "the unnormalised result");
        cg_line(G, "float ma%s = %s, mb%s = %s, la%s = 0.0f, lb%s = 0.0f; // rows a and b of tile "
                   "%d: the running max, the lane's sum", suf[t], ninf, suf[t], ninf, suf[t],
                suf[t], t);
    }
    mma_key_loop(G, &v, kt, true);
    cg_line(G, "if (j0 >= wend)");
    cg_line(G, "    continue; // none of the warp's rows sees these keys");
    for (int t = 0; t < 2; t++)
        mma_zero(G, cg_fmt(G, "sc%s", suf[t]), kt / 8, "the scores of tile 0, 1");
    cg_line(G, "#pragma unroll");
    cg_line(G, "for (int c = 0; c < %lld; c++) {", (long long)(d / 16));
    cg_line(G, "    #pragma unroll");
    cg_line(G, "    for (int n = 0; n < %d; n++) { // a fragment of k's tile, both tiles' products",
            kt / 8);
    cg_line(G, "        unsigned b0, b1;");
    cg_line(G, "        sh_ldsm2(b0, b1, ks + (n * 8 + (lane & 7)) * %d + c * 16 + (lane >> 3 & 1) "
               "* 8);", ldk);
    cg_line(G, "        %s(sc0[n], qa0[c], b0, b1);", mma);
    cg_line(G, "        %s(sc1[n], qa1[c], b0, b1);", mma);
    cg_line(G, "    }");
    cg_line(G, "}");
    cg_line(G, "float oa0, ob0, oa1, ob1; // minus each row's max, 0 while it sees no key");
    for (int t = 0; t < 2; t++) {
        cg_line(G, "{ // tile %d's rows: hidden scores, the max, the rescaling", t);
        G->indent++;
        mma_tile_max(G, &v, kt, suf[t], true);
        cg_line(G, "oa%s = oa;", suf[t]);
        cg_line(G, "ob%s = ob;", suf[t]);
        G->indent--;
        cg_line(G, "}");
    }
    cg_line(G, "#pragma unroll");
    cg_line(G, "for (int kk = 0; kk < %d; kk++) {", kt / 16);
    G->indent++;
    for (int t = 0; t < 2; t++) {
        const char *x = suf[t];
        mma_weights(G, cg_fmt(G, "ph%s", x),
                    cg_fmt(G, "sh_exp2(fmaf(sc%s[n][e], %s, e < 2 ? oa%s : ob%s))", x,
                           mma_c2(G, &v), x, x),
                    cg_fmt(G, "if (e < 2) la%s += w_; else lb%s += w_;", x, x), dt);
    }
    cg_line(G, "#pragma unroll");
    cg_line(G, "for (int nn = 0; nn < %lld; nn++) { // a fragment of v's tile, both tiles' products",
            (long long)(dv / 8));
    cg_line(G, "    unsigned b0, b1;");
    cg_line(G, "    sh_ldsm2t(b0, b1, vs + (kk * 16 + (lane & 15)) * %d + nn * 8);", ldv);
    cg_line(G, "    %s(oacc0[nn], ph0, b0, b1);", mma);
    cg_line(G, "    %s(oacc1[nn], ph1, b0, b1);", mma);
    cg_line(G, "}");
    G->indent--;
    cg_line(G, "}");
    G->indent--;
    cg_line(G, "}");
    for (int t = 0; t < 2; t++) {
        const char *x = suf[t];
        cg_line(G, "#pragma unroll");
        cg_line(G, "for (int o = 1; o <= 2; o <<= 1) { // the row's 4 lanes");
        cg_line(G, "    la%s += __shfl_xor_sync(0xffffffffu, la%s, o);", x, x);
        cg_line(G, "    lb%s += __shfl_xor_sync(0xffffffffu, lb%s, o);", x, x);
        cg_line(G, "}");
        mma_write(G, cg_fmt(G, "oacc%s", x), cg_fmt(G, "(la%s > 0.0f ? 1.0f / la%s : 0.0f)", x, x),
                  cg_fmt(G, "(lb%s > 0.0f ? 1.0f / lb%s : 0.0f)", x, x), cg_fmt(G, "p%d", op->nin),
                  cg_fmt(G, "q0 + %d", 16 * t), s, dv, dt);
        if (lse) {
            cg_line(G, "#pragma unroll");
            cg_line(G, "for (int x = 0; x < 2; x++) { // the log-sum-exp of tile %d's rows a and b",
                    t);
            cg_line(G, "    const i64 row = q0 + %d + gr + x * 8, e = x ? eb%s : ea%s;", 16 * t, x,
                    x);
            cg_line(G, "    if (row < %lld && tq == 0)", (long long)s);
            cg_line(G, "        %s[h * %lld + row] = e > 0 ? (x ? mb%s : ma%s) * %s + logf(x ? "
                       "lb%s : la%s) : 0.0f; // m in base 2", lse, (long long)s, x, x, MMA_LN2,
                    x, x);
            cg_line(G, "}");
        }
    }
    G->indent--;
    cg_line(G, "}");
}

/* attention (q, k, v[, pos]), with its log-sum-exp into lse too where
 * lse is not NULL (an attention-with-lse group's kernel, passes/fuse.h),
 * or attn_lse (q, k[, pos]) alone: the same rows, tiles, scores and sums
 * in the same order, so that the two give the same bits. */
static void emit_attention_mma(gen *G, cg_cuda_kernel *k, const ir_op *op, const char *lse)
{
    at_view v = at_view_of(op);
    if (attn_rows32(op, &v)) {
        emit_attention_mma2(G, k, op, lse);
        return;
    }
    int64_t s = v.s, d = v.d, dv = v.dv;
    bool has_v = op->code == IR_ATTENTION;
    if (!has_v)
        lse = cg_fmt(G, "p%d", op->nin);
    ir_dtype dt = v.dt;
    bool x3 = dt == IR_F32; /* cg_attention_x3 */
    const char *ninf = "__int_as_float(0xff800000)";
    const char *mma = dt == IR_F16 ? "sh_mma_f16" : "sh_mma_bf16";
    int ldk = (int)d + TC_PAD, ldv = has_v ? (int)dv + TC_PAD : 0;
    bool dbl;
    int kt = mma_rows_start(G, k, op, &v, ldk, ldv, ldk, "qst", "the warp's q rows on their way in",
                            &dbl);
    if (x3)
        mma_own_rows_x3(G, "qa", "qst", "q0", 0, s, d);
    else
        mma_own_rows(G, "qa", "qst", "q0", 0, s, d);
    if (has_v)
        mma_zero(G, "oacc", dv / 8, "the unnormalised result");
    cg_line(G, "float ma = %s, mb = %s, la = 0.0f, lb = 0.0f; // rows a and b: the running max, "
               "the lane's sum", ninf, ninf);
    mma_key_loop(G, &v, kt, dbl);
    cg_line(G, "if (j0 >= wend)");
    cg_line(G, "    continue; // none of the warp's rows sees these keys");
    if (x3)
        mma_products_x3(G, "sc", "qa", "ks", ldk, kt, d);
    else
        mma_products(G, "sc", "qa", "ks", ldk, kt, d, mma);
    mma_tile_max(G, &v, kt, "", has_v);
    cg_line(G, "#pragma unroll");
    cg_line(G, "for (int kk = 0; kk < %d; kk++) {", kt / 16);
    G->indent++;
    const char *w = cg_fmt(G, "sh_exp2(fmaf(sc[n][e], %s, e < 2 ? oa : ob))", mma_c2(G, &v));
    if (has_v && x3) {
        mma_weights_x3(G, "pw", w, "if (e < 2) la += w_; else lb += w_;");
        mma_weighted_x3(G, "oacc", "pw", "vs", ldv, dv);
    } else if (has_v) {
        mma_weights(G, "ph", w, "if (e < 2) la += w_; else lb += w_;", dt);
        mma_weighted(G, "oacc", "ph", "vs", ldv, dv, mma);
    } else { /* the sums alone, in mma_weights' order */
        cg_line(G, "#pragma unroll");
        cg_line(G, "for (int x = 0; x < 4; x++) {");
        cg_line(G, "    const int n = 2 * kk + x / 2, e0 = x %% 2 * 2;");
        cg_line(G, "    #pragma unroll");
        cg_line(G, "    for (int y = 0; y < 2; y++) {");
        cg_line(G, "        const int e = e0 + y;");
        cg_line(G, "        const float w_ = %s;", w);
        cg_line(G, "        if (e < 2) la += w_; else lb += w_;");
        cg_line(G, "    }");
        cg_line(G, "}");
    }
    G->indent--;
    cg_line(G, "}");
    G->indent--;
    cg_line(G, "}");
    cg_line(G, "#pragma unroll");
    cg_line(G, "for (int o = 1; o <= 2; o <<= 1) { // the row's 4 lanes");
    cg_line(G, "    la += __shfl_xor_sync(0xffffffffu, la, o);");
    cg_line(G, "    lb += __shfl_xor_sync(0xffffffffu, lb, o);");
    cg_line(G, "}");
    if (has_v)
        mma_write(G, "oacc", "(la > 0.0f ? 1.0f / la : 0.0f)", "(lb > 0.0f ? 1.0f / lb : 0.0f)",
                  cg_fmt(G, "p%d", op->nin), "q0", s, dv, dt);
    if (lse) {
        cg_line(G, "#pragma unroll");
        cg_line(G, "for (int x = 0; x < 2; x++) { // the log-sum-exp of rows a and b");
        cg_line(G, "    const i64 row = q0 + gr + x * 8, e = x ? eb : ea;");
        cg_line(G, "    if (row < %lld && tq == 0)", (long long)s);
        cg_line(G, "        %s[h * %lld + row] = e > 0 ? (x ? mb : ma) * %s + logf(x ? lb : la) : "
                   "0.0f; // m in base 2", lse, (long long)s, MMA_LN2);
        cg_line(G, "}");
    }
    G->indent--;
    cg_line(G, "}");
}

/* attention's backward (ops.def: attn_stats, attn_dq, attn_dk, attn_dv),
 * flash style in the forward's layout: a row of width d or dv is a group
 * of threads (at_group of the wider) holding float4 chunks c * group + g
 * of it in registers, the other side's rows come through shared tiles
 * (widened to f32, zero-padded), and a dot product is fused multiply-adds
 * summed over the group by shuffles, in the same order in every kernel
 * (so that each sees the same bits of s_ij and dp_ij). Every sum has a
 * fixed order and one thread: no atomics, the same bits from run to run.
 * - attn_stats and attn_dq take query rows, 128 / group of one head a
 *   block (the last rows first), and the tiles of the keys and values the
 *   block's rows see. attn_stats keeps a tile's scores and dp, and the
 *   running max m, sum l of exp(s - m) and sum u of exp(s - m) dp,
 *   rescaled once per tile (online softmax), then writes lse = m + log l
 *   and delta = u / l; attn_dq goes key by key (s, dp, then ds k into the
 *   row's sum: no arrays of a tile's values, which spill), p from lse,
 *   and scales by c at the end.
 * - attn_dk and attn_dv take key rows, 128 / group of one head a block,
 *   and tiles of the query rows, their dy rows, lse, delta and end of the
 *   keys seen, row by row like attn_dq; a pair (i, j) counts where j <
 *   end_i. Causal without the query positions, row i sees key j from i =
 *   j - (T - S) on, so a block starts at the tile of its first key's first
 *   row; with them, a tile none of whose rows sees the block's first key
 *   is skipped.
 * A key a row does not see takes no part (its score, dp and values, even
 * NaN, are left out): a row that sees none has lse, delta and dq 0, a key
 * that none sees dk and dv 0. Widths past AT_MAX_CHUNKS chunks have no
 * kernel (cg_cuda_op_kernel; the pass that makes these ops leaves them
 * out). */

/* The backward's shapes of a kernel (at_view) and its tiles: group threads
 * a row, nc chunks of d and ncv of dv a thread, rows padded to dpad and
 * dvpad in tiles of kt rows, each with extra words more, and fixed words
 * after the tiles; kt halves from AT_KT while shared passes AT_SHARED. */
typedef struct at_geom {
    at_view v;
    int group, rows, nc, ncv, kt;
    int64_t dpad, dvpad, shared;
} at_geom;

static at_geom at_geom_of(const ir_op *op, int extra, int fixed)
{
    if (!cg_attention_tiled(op))
        su_unreachable(); /* cg_cuda_op_kernel gives such an op no kernel */
    at_geom a = {.v = at_view_of(op)};
    a.group = at_group(a.v.d > a.v.dv ? a.v.d : a.v.dv);
    a.rows = AT_BLOCK / a.group;
    a.nc = (int)((a.v.d + 4 * a.group - 1) / (4 * a.group));
    a.ncv = (int)((a.v.dv + 4 * a.group - 1) / (4 * a.group));
    a.dpad = (int64_t)a.nc * 4 * a.group;
    a.dvpad = (int64_t)a.ncv * 4 * a.group;
    for (a.kt = AT_KT;; a.kt /= 2) {
        a.shared = (a.kt * (a.dpad + a.dvpad + extra) + fixed) * (int64_t)sizeof(float);
        if (a.shared <= AT_SHARED || a.kt <= 4)
            break;
    }
    return a;
}

/* attn_stats' running max m and sums l of exp(s - m) and u of exp(s -
 * m) dp, rescaled to the new max and n more keys added (sc[] their scores,
 * -inf where hidden, tmax their max; dp[] their dp, 0 where hidden). */
static void at_stats_update(gen *G, int n, const char *ninf)
{
    cg_line(G, "const float mn = tmax > m || tmax != tmax ? tmax : m;");
    cg_line(G, "if (mn != %s) { // else no key seen yet", ninf);
    cg_line(G, "    const float alpha = expf(m - mn); // 0 while m is -inf");
    cg_line(G, "    l *= alpha;");
    cg_line(G, "    u *= alpha;");
    cg_line(G, "    #pragma unroll");
    cg_line(G, "    for (int jj = 0; jj < %d; jj++) {", n);
    cg_line(G, "        const float p = expf(sc[jj] - mn);");
    cg_line(G, "        l += p;");
    cg_line(G, "        u = fmaf(p, dp[jj], u);");
    cg_line(G, "    }");
    cg_line(G, "    m = mn;");
    cg_line(G, "}");
}

/* attn_stats' tile (after at_scores): the row's dp of the tile's keys,
 * then m, l and u rescaled to the new max and the keys added. */
static void at_stats_tile(gen *G, const at_geom *a, const at_tile *vs, const char *ninf)
{
    cg_line(G, "float dp[%d];", a->kt);
    cg_line(G, "#pragma unroll");
    cg_line(G, "for (int jj = 0; jj < %d; jj++) {", a->kt);
    G->indent++;
    at_dot(G, "acc", "dy", vs, a->group);
    cg_line(G, "dp[jj] = j0 + jj < end ? acc : 0.0f; // 0 for a key the row does not see");
    G->indent--;
    cg_line(G, "}");
    at_stats_update(G, a->kt, ninf);
}

/* attn_stats (q, k, v, dy[, pos]) and attn_dq (q, k, v, dy, st[, pos]):
 * a group per query row (see above). */
static void emit_attn_rows(gen *G, cg_cuda_kernel *k, const ir_op *op)
{
    at_geom a = at_geom_of(op, 0, 1);
    const at_view *v = &a.v;
    bool dq = op->code == IR_ATTN_DQ;
    int64_t s = v->s, t = v->t, nqb = (s + a.rows - 1) / a.rows, total = v->heads * nqb;
    int kt = a.kt, group = a.group;
    at_tile ks = {"ks", "kk", "jj", a.dpad, a.nc}, vs = {"vs", "vv", "jj", a.dvpad, a.ncv};
    const char *out = cg_fmt(G, "p%d", op->nin), *ninf = "__int_as_float(0xff800000)";
    const char *scale = cg_f32_text(G, v->scale);
    k->strategy = CG_CUDA_ROW;
    k->vec = 1;
    k->block = AT_BLOCK;
    k->grid = cg_grid_for(total, 1);
    k->shared_bytes = (int)a.shared;
    cg_line(G, "extern __shared__ float sm[];");
    cg_line(G, "float *ks = sm; // [%d keys][%lld]", kt, (long long)a.dpad);
    cg_line(G, "float *vs = sm + %lld; // [%d keys][%lld]", (long long)(kt * a.dpad), kt,
            (long long)a.dvpad);
    cg_line(G, "int *bend = (int *)(sm + %lld); // the block's last key + 1",
            (long long)(kt * (a.dpad + a.dvpad)));
    cg_line(G, "const int g = threadIdx.x %% %d, lr = threadIdx.x / %d; // slice and row in the "
               "block", group, group);
    cg_line(G, "for (i64 bi = blockIdx.x; bi < %lld; bi += gridDim.x) {", (long long)total);
    G->indent++;
    cg_line(G, "const i64 h = bi / %lld, i = (%lld - bi %% %lld) * %d + lr; // head, query row",
            (long long)nqb, (long long)(nqb - 1), (long long)nqb, a.rows);
    at_key_head(G);
    cg_line(G, "const bool live = i < %lld;", (long long)s);
    cg_line(G, "const i64 end = live ? %s : 0;", at_end(G, op, v));
    at_block_end(G);
    at_load_row(G, "q", "the query row", 0, "i", s, v->d, a.nc, group, v->dt);
    at_load_row(G, "dy", "the result's gradient", 3, "i", s, v->dv, a.ncv, group, v->dt);
    if (dq) {
        cg_line(G, "const float lse = live ? p4[(h * %lld + i) * 2] : 0.0f;", (long long)s);
        cg_line(G, "const float delta = live ? p4[(h * %lld + i) * 2 + 1] : 0.0f;", (long long)s);
        at_zero_row(G, "dq", a.nc * 4, "sum ds k");
    } else {
        cg_line(G, "// running max, sum of exp(s - m), sum of exp(s - m) dp");
        cg_line(G, "float m = %s, l = 0.0f, u = 0.0f;", ninf);
    }
    cg_line(G, "for (i64 j0 = 0; j0 < kend; j0 += %d) {", kt);
    G->indent++;
    cg_line(G, "__syncthreads(); // the last tile is read");
    at_load_tile(G, "ks", 1, 'j', t, v->d, a.dpad, kt, v->dt);
    at_load_tile(G, "vs", 2, 'j', t, v->dv, a.dvpad, kt, v->dt);
    cg_line(G, "__syncthreads();");
    if (dq) { /* key by key: no arrays of the tile's scores (registers) */
        cg_line(G, "#pragma unroll %d", AT_UNROLL);
        cg_line(G, "for (int jj = 0; jj < %d; jj++) {", kt);
        G->indent++;
        at_dot(G, "qk", "q", &ks, group);
        at_dot(G, "dp", "dy", &vs, group);
        cg_line(G, "if (j0 + jj < end) { // else the row does not see the key");
        G->indent++;
        cg_line(G, "const float ds = expf(qk * %s - lse) * (dp - delta);", scale);
        at_axpy(G, "dq", "ds", &ks, group);
        G->indent--;
        cg_line(G, "}");
        G->indent--;
        cg_line(G, "}");
    } else {
        at_scores(G, kt, a.nc, group, a.dpad, v->scale);
        at_stats_tile(G, &a, &vs, ninf);
    }
    G->indent--;
    cg_line(G, "}");
    if (dq) {
        at_store_row(G, out, "i", s, v->d, a.nc, group, v->dt,
                     cg_fmt(G, "dq[c * 4 + e] * %s", scale));
    } else {
        cg_line(G, "if (live && g == 0) { // the group's threads hold the same sums");
        cg_line(G, "    %s[(h * %lld + i) * 2] = end > 0 ? m + logf(l) : 0.0f;", out, (long long)s);
        cg_line(G, "    %s[(h * %lld + i) * 2 + 1] = end > 0 ? u / l : 0.0f;", out, (long long)s);
        cg_line(G, "}");
    }
    G->indent--;
    cg_line(G, "}");
}

/* The lse and delta of query rows [i0, i0 + qt) (operand p<pdy + 1>)
 * into the shared st[qt][2], and the end of the keys each sees into
 * es[qt]. */
static void at_tile_stats(gen *G, const ir_op *op, const at_view *v, int pdy, int qt,
                          const char *st)
{
    long long s = (long long)v->s;
    cg_line(G, "for (int ii = threadIdx.x; ii < %d; ii += blockDim.x) {", qt);
    G->indent++;
    cg_line(G, "const i64 i = i0 + ii;");
    cg_line(G, "const bool row = i < %lld;", s);
    cg_line(G, "%s[ii * 2] = row ? p%d[(h * %lld + i) * 2] : 0.0f;", st, pdy + 1, s);
    cg_line(G, "%s[ii * 2 + 1] = row ? p%d[(h * %lld + i) * 2 + 1] : 0.0f;", st, pdy + 1, s);
    cg_line(G, "es[ii] = row ? (int)%s : 0;", at_end(G, op, v));
    G->indent--;
    cg_line(G, "}");
}

/* The loop over tiles of qt query rows from i0 for a block of keys from
 * j1, opened: causal without the query positions, from the tile of j1's
 * first row (see above). */
static void at_tiles_first(gen *G, const ir_op *op, const at_view *v, int qt)
{
    int64_t s = v->s, t = v->t;
    if (op->a->causal && !v->pos && t == s)
        cg_line(G, "const i64 i1 = j1 / %d * %d; // the tile of key j1's first row", qt, qt);
    else if (op->a->causal && !v->pos)
        cg_line(G, "const i64 i1 = max(j1 %c %lld, (i64)0) / %d * %d; // the tile of key j1's "
                   "first row", t > s ? '-' : '+', (long long)(t > s ? t - s : s - t), qt, qt);
    else
        cg_line(G, "const i64 i1 = 0;");
}

static void at_tiles_open(gen *G, const ir_op *op, const at_view *v, int qt)
{
    at_tiles_first(G, op, v, qt);
    cg_line(G, "for (i64 i0 = i1; i0 < %lld; i0 += %d) {", (long long)v->s, qt);
    G->indent++;
}

/* With the query positions, the tile is skipped where none of its rows
 * sees key j1 (es read by every thread of the block alike). */
static void at_tile_skip(gen *G, const at_view *v, int qt)
{
    if (!v->pos)
        return;
    cg_line(G, "bool seen = false; // whether a row of the tile sees key j1");
    cg_line(G, "for (int ii = 0; ii < %d; ii++)", qt);
    cg_line(G, "    seen |= es[ii] > j1;");
    cg_line(G, "if (!seen)");
    cg_line(G, "    continue; // in every thread of the block: they read the same es");
}

/* attn_dk and attn_dv's query tile: rows [i0, i0 + qt) of q and dy, and
 * their lse, delta and end of the keys they see. */
static void at_query_tile(gen *G, const ir_op *op, const at_geom *a, int pdy)
{
    const at_view *v = &a->v;
    int64_t s = v->s;
    at_load_tile(G, "qs", 0, 'i', s, v->d, a->dpad, a->kt, v->dt);
    at_load_tile(G, "ys", pdy, 'i', s, v->dv, a->dvpad, a->kt, v->dt);
    at_tile_stats(G, op, v, pdy, a->kt, "ss");
}

/* attn_dk (q, k, v, dy, st[, pos]) and attn_dv (q, k, dy, st[, pos]): a
 * group per key row (see above). With dv_too, op is attn_dk and the
 * kernel also sums attn_dv's p dy into p<nin + 1> (the pair of
 * passes/fuse.h): one pass over the query rows, each p computed once for
 * both, with the same operations in the same order as each kernel alone,
 * so each result has the bits it has alone. With groups (k and v of fewer
 * heads than q: ir_attn_group), a block takes key rows of key head hk and
 * runs the query tiles of each query head of its group in turn
 * (at_group_open), summing into the same registers; the tensor-core
 * kernels below do the same. */
static void emit_attn_cols(gen *G, cg_cuda_kernel *k, const ir_op *op, bool dv_too)
{
    at_geom a = at_geom_of(op, 3, 0);
    const at_view *v = &a.v;
    bool dk = op->code == IR_ATTN_DK;
    int pdy = dk ? 3 : 2, qt = a.kt, group = a.group;
    int64_t t = v->t, nkb = (t + a.rows - 1) / a.rows, total = v->heads / v->grp * nkb;
    int64_t tiles = qt * (a.dpad + a.dvpad);
    at_tile qs = {"qs", "qq", "ii", a.dpad, a.nc}, ys = {"ys", "yy", "ii", a.dvpad, a.ncv};
    const char *out = cg_fmt(G, "p%d", op->nin), *scale = cg_f32_text(G, v->scale);
    const char *acc = dk ? "dk" : "dv"; /* not acc: at_dot's */
    k->strategy = CG_CUDA_ROW;
    k->vec = 1;
    k->block = AT_BLOCK;
    k->grid = cg_grid_for(total, 1);
    k->shared_bytes = (int)a.shared;
    cg_line(G, "extern __shared__ float sm[];");
    cg_line(G, "float *qs = sm; // [%d queries][%lld]", qt, (long long)a.dpad);
    cg_line(G, "float *ys = sm + %lld; // [%d queries][%lld]: their rows of dy",
            (long long)(qt * a.dpad), qt, (long long)a.dvpad);
    cg_line(G, "float *ss = sm + %lld; // [%d queries][2]: their lse and delta", (long long)tiles,
            qt);
    cg_line(G, "int *es = (int *)(sm + %lld); // [%d queries]: the end of the keys each sees",
            (long long)(tiles + 2 * qt), qt);
    cg_line(G, "const int g = threadIdx.x %% %d, lr = threadIdx.x / %d; // slice and key in the "
               "block", group, group);
    cg_line(G, "for (i64 bi = blockIdx.x; bi < %lld; bi += gridDim.x) {", (long long)total);
    G->indent++;
    cg_line(G, "const i64 %s = bi / %lld, j1 = bi %% %lld * %d, j = j1 + lr; // head, first key, "
               "key", v->grp > 1 ? "hk" : "h", (long long)nkb, (long long)nkb, a.rows);
    cg_line(G, "const bool live = j < %lld;", (long long)t);
    at_load_row(G, "k", "the key row", 1, "j", t, v->d, a.nc, group, v->dt);
    if (dk)
        at_load_row(G, "v", "the value row", 2, "j", t, v->dv, a.ncv, group, v->dt);
    at_zero_row(G, acc, (dk ? a.nc : a.ncv) * 4, dk ? "sum ds q" : "sum p dy");
    if (dv_too)
        at_zero_row(G, "dv", a.ncv * 4, "sum p dy");
    at_group_open(G);
    at_tiles_open(G, op, v, qt);
    cg_line(G, "__syncthreads(); // the last tile is read");
    at_query_tile(G, op, &a, pdy);
    cg_line(G, "__syncthreads();");
    at_tile_skip(G, v, qt);
    cg_line(G, "#pragma unroll %d", AT_UNROLL);
    cg_line(G, "for (int ii = 0; ii < %d; ii++) {", qt);
    G->indent++;
    at_dot(G, "qk", "k", &qs, group);
    if (dk)
        at_dot(G, "dp", "v", &ys, group);
    cg_line(G, "if (j < es[ii]) { // else row i does not see key j");
    G->indent++;
    cg_line(G, "const float p = expf(qk * %s - ss[ii * 2]);", scale);
    if (dk) {
        cg_line(G, "const float ds = p * (dp - ss[ii * 2 + 1]);");
        at_axpy(G, acc, "ds", &qs, group);
    }
    if (!dk || dv_too)
        at_axpy(G, "dv", "p", &ys, group);
    G->indent--;
    cg_line(G, "}");
    G->indent--;
    cg_line(G, "}");
    G->indent--;
    cg_line(G, "}");
    at_group_close(G);
    at_store_row(G, out, "j", t, dk ? v->d : v->dv, dk ? a.nc : a.ncv, group, v->dt,
                 dk ? cg_fmt(G, "dk[c * 4 + e] * %s", scale) : "dv[c * 4 + e]");
    if (dv_too)
        at_store_row(G, cg_fmt(G, "p%d", op->nin + 1), "j", t, v->dv, a.ncv, group, v->dt,
                     "dv[c * 4 + e]");
    G->indent--;
    cg_line(G, "}");
}

/* attn_stats (q, k, v, dy[, pos]) and attn_dq (q, k, v, dy, st[, pos]) on
 * tensor cores (see "attention on tensor cores"): a warp per 16 query
 * rows, q and dy in fragments, the scores and dp of a key tile through the
 * scratch. attn_stats keeps the row's running max and each lane's sums of
 * exp(s - m) and exp(s - m) dp (emit_attn_rows' rules), then writes lse
 * and delta; attn_dq writes ds = p (dp - delta) over the scores as hi and
 * lo and adds ds k into its fragments, scaled by c at the end. */
static void emit_attn_rows_wmma(gen *G, cg_cuda_kernel *k, const ir_op *op)
{
    at_view v = at_view_of(op);
    int64_t s = v.s, d = v.d, dv = v.dv;
    bool dq = op->code == IR_ATTN_DQ;
    ir_dtype dt = v.dt;
    const char *T = cg_ctype(G, dt), *ninf = "__int_as_float(0xff800000)";
    const char *scale = cg_f32_text(G, v.scale);
    int ldk = (int)d + TC_PAD, ldv = (int)dv + TC_PAD;
    int64_t stage = 16 * (int64_t)(ldk > ldv ? ldk : ldv) * 2;
    tc_geom a = tc_geom_of((ldk + ldv) * 2, (256 + 4) * 4, stage, 2);
    int kt = a.kt, ldp = kt + TC_PAD, lds = kt + 4, half = kt / 2;
    int64_t nqb = (s + TC_ROWS - 1) / TC_ROWS, total = v.heads * nqb;
    int64_t o_vs = (int64_t)kt * ldk * 2, o_ws = o_vs + (int64_t)kt * ldv * 2,
            o_rid = o_ws + TC_WARPS * a.ws;
    tc_prologue(G, k, total, &a, T, o_rid);
    tc_key_decls(G, T, kt, ldk, ldv);
    cg_line(G, "// the warp's scratch: its q and dy rows, or the scores [16][%d] f32 (then ds' "
               "hi and lo [16][%d] each) and dp [16][%d] f32, or a result tile",
            lds, ldp, lds);
    cg_line(G, "unsigned char *const wsb = smb + %lld + warp * %lld;", (long long)o_ws,
            (long long)a.ws);
    cg_line(G, "%s *const stg = (%s *)wsb; // the warp's own rows on their way in", T, T);
    cg_line(G, "float *const ss = (float *)wsb, *const dps = (float *)(wsb + %lld);",
            (long long)tc_region(kt));
    if (dq)
        cg_line(G, "%s *const dhi = (%s *)wsb, *const dlo = (%s *)(wsb + %d);", T, T, T,
                16 * ldp * 2);
    cg_line(G, "int *const bend = (int *)(smb + %lld); // the block's last key + 1",
            (long long)(o_rid + 256 * 4));
    tc_query_head(G, op, &v, total);
    tc_own_rows(G, "qf", "stg", "q0", 0, s, d);
    tc_own_rows(G, "yf", "stg", "q0", 3, s, dv);
    if (dq) {
        cg_line(G, "const float lse = live ? p4[(h * %lld + i) * 2] : 0.0f;", (long long)s);
        cg_line(G, "const float delta = live ? p4[(h * %lld + i) * 2 + 1] : 0.0f;", (long long)s);
        tc_zero(G, "dqf", d / 16, "sum ds k");
    } else {
        cg_line(G, "// the row's running max, the lane's sums of exp(s - m) and exp(s - m) dp");
        cg_line(G, "float m = %s, l = 0.0f, u = 0.0f;", ninf);
    }
    cg_line(G, "for (i64 j0 = 0; j0 < kend; j0 += %d) {", kt);
    G->indent++;
    tc_key_tiles(G, &v, kt);
    tc_products(G, "ss", lds, "qf", "ks", kt, d);
    tc_products(G, "dps", lds, "yf", "vs", kt, dv);
    cg_line(G, "__syncwarp();");
    if (dq) {
        cg_line(G, "float ds[%d];", half);
        tc_lanes_open(G, half, NULL);
        cg_line(G, "ds[jj] = j0 + c < end ? expf(ss[r * %d + c] * %s - lse) * (dps[r * %d + c] - "
                   "delta) : 0.0f;", lds, scale, lds);
        tc_lanes_close(G);
        cg_line(G, "__syncwarp(); // the scores are read: ds goes over them");
        tc_lanes_open(G, half, NULL);
        tc_put_weight(G, "dhi", "dlo", ldp, "ds[jj]", dt);
        tc_lanes_close(G);
        cg_line(G, "__syncwarp();");
        tc_weighted(G, "dqf", "dhi", "dlo", ldp, "ks", kt, d);
    } else {
        cg_line(G, "float sc[%d], dp[%d], tmax = %s;", half, half, ninf);
        tc_lanes_open(G, half, NULL);
        cg_line(G, "const bool seen = j0 + c < end;");
        cg_line(G, "sc[jj] = seen ? ss[r * %d + c] * %s : %s;", lds, scale, ninf);
        cg_line(G, "dp[jj] = seen ? dps[r * %d + c] : 0.0f; // 0 for a key the row does not see",
                lds);
        cg_line(G, "tmax = sc[jj] > tmax || sc[jj] != sc[jj] ? sc[jj] : tmax; // NaN wins");
        tc_lanes_close(G);
        tc_row_max(G);
        at_stats_update(G, half, ninf);
    }
    G->indent--;
    cg_line(G, "}");
    if (dq) {
        cg_line(G, "__syncwarp(); // the last ds is read");
        tc_write(G, "dqf", scale, "ss", cg_fmt(G, "p%d", op->nin), "q0", s, d, dt);
    } else {
        cg_line(G, "l += __shfl_xor_sync(0xffffffffu, l, 1); // the row's two halves");
        cg_line(G, "u += __shfl_xor_sync(0xffffffffu, u, 1);");
        cg_line(G, "if (live && g == 0) {");
        cg_line(G, "    p%d[(h * %lld + i) * 2] = end > 0 ? m + logf(l) : 0.0f;", op->nin,
                (long long)s);
        cg_line(G, "    p%d[(h * %lld + i) * 2 + 1] = end > 0 ? u / l : 0.0f;", op->nin,
                (long long)s);
        cg_line(G, "}");
    }
    G->indent--;
    cg_line(G, "}");
}

/* attn_stats and attn_dq on mma.sync (see "attention on tensor cores
 * through PTX"): emit_attn_rows_wmma's blocks, tiles and rules, with the
 * scores and dp of a warp's 16 rows in registers. attn_stats keeps each
 * row's running max m, sum l of exp(s - m) and sum u of exp(s - m) dp
 * (the lane's, summed over the row's 4 lanes at the end); attn_dq makes
 * ds = p (dp - delta) in registers and adds ds k, k's tile read
 * transposed. */
static void emit_attn_rows_mma(gen *G, cg_cuda_kernel *k, const ir_op *op)
{
    at_view v = at_view_of(op);
    int64_t s = v.s, d = v.d, dv = v.dv;
    bool dq = op->code == IR_ATTN_DQ;
    ir_dtype dt = v.dt;
    bool x3 = dt == IR_F32; /* cg_attention_x3 */
    const char *ninf = "__int_as_float(0xff800000)";
    const char *scale = cg_f32_text(G, v.scale), *mma = dt == IR_F16 ? "sh_mma_f16" : "sh_mma_bf16";
    int ldk = (int)d + TC_PAD, ldv = (int)dv + TC_PAD;
    bool dbl;
    int kt = mma_rows_start(G, k, op, &v, ldk, ldv, ldk > ldv ? ldk : ldv, "stg",
                            "the warp's own rows on their way in", &dbl);
    if (x3) {
        mma_own_rows_x3(G, "qa", "stg", "q0", 0, s, d);
        mma_own_rows_x3(G, "ya", "stg", "q0", 3, s, dv);
    } else {
        mma_own_rows(G, "qa", "stg", "q0", 0, s, d);
        mma_own_rows(G, "ya", "stg", "q0", 3, s, dv);
    }
    if (dq) {
        cg_line(G, "float lse[2], delta[2]; // rows a and b's");
        cg_line(G, "#pragma unroll");
        cg_line(G, "for (int x = 0; x < 2; x++) {");
        cg_line(G, "    const i64 row = q0 + gr + x * 8;");
        cg_line(G, "    lse[x] = row < %lld ? p4[(h * %lld + row) * 2] : 0.0f;", (long long)s,
                (long long)s);
        cg_line(G, "    delta[x] = row < %lld ? p4[(h * %lld + row) * 2 + 1] : 0.0f;", (long long)s,
                (long long)s);
        cg_line(G, "}");
        cg_line(G, "const float nl[2] = {-lse[0] * %s, -lse[1] * %s}; // -lse log2(e)", MMA_LOG2E,
                MMA_LOG2E);
        mma_zero(G, "dqa", d / 8, "sum ds k");
    } else {
        cg_line(G, "// rows a and b: the running max, the lane's sums of exp(s - m) and exp(s - m) dp");
        cg_line(G, "float m[2] = {%s, %s}, l[2] = {0.0f, 0.0f}, u[2] = {0.0f, 0.0f};", ninf, ninf);
    }
    mma_key_loop(G, &v, kt, dbl);
    cg_line(G, "if (j0 >= wend)");
    cg_line(G, "    continue; // none of the warp's rows sees these keys");
    if (x3) {
        mma_products_x3(G, "sc", "qa", "ks", ldk, kt, d);
        mma_products_x3(G, "dp", "ya", "vs", ldv, kt, dv);
    } else {
        mma_products(G, "sc", "qa", "ks", ldk, kt, d, mma);
        mma_products(G, "dp", "ya", "vs", ldv, kt, dv, mma);
    }
    mma_tile_cols(G, "ea", "eb", kt);
    const char *c2 = mma_c2(G, &v);
    if (dq) {
        cg_line(G, "#pragma unroll");
        cg_line(G, "for (int kk = 0; kk < %d; kk++) {", kt / 16);
        G->indent++;
        const char *ds = cg_fmt(G, "%s ? sh_exp2(fmaf(sc[n][e], %s, nl[e >> 1])) * (dp[n][e] - "
                                   "delta[e >> 1]) : 0.0f", MMA_SEEN, c2);
        if (x3) {
            mma_weights_x3(G, "dw", ds, NULL);
            mma_weighted_x3(G, "dqa", "dw", "ks", ldk, d);
        } else {
            mma_weights(G, "dh", ds, NULL, dt);
            mma_weighted(G, "dqa", "dh", "ks", ldk, d, mma);
        }
        G->indent--;
        cg_line(G, "}");
    } else {
        cg_line(G, "float tm[2] = {%s, %s};", ninf, ninf);
        cg_line(G, "#pragma unroll");
        cg_line(G, "for (int n = 0; n < %d; n++) {", kt / 8);
        cg_line(G, "    #pragma unroll");
        cg_line(G, "    for (int e = 0; e < 4; e++) {");
        cg_line(G, "        const bool seen = %s;", MMA_SEEN);
        cg_line(G, "        sc[n][e] = seen ? sc[n][e] : %s; // the raw score", ninf);
        cg_line(G, "        dp[n][e] = seen ? dp[n][e] : 0.0f; // 0 for a key the row does not see");
        cg_line(G, "        const float x = sc[n][e];");
        cg_line(G, "        tm[e >> 1] = sh_max_nan(tm[e >> 1], x); // NaN wins");
        cg_line(G, "    }");
        cg_line(G, "}");
        cg_line(G, "#pragma unroll");
        cg_line(G, "for (int x = 0; x < 2; x++) {");
        G->indent++;
        mma_quad_max(G, "tm[x]");
        cg_line(G, "tm[x] *= %s; // scaled, in base 2: s c log2(e)", c2);
        cg_line(G, "const float mn = sh_max_nan(m[x], tm[x]);");
        cg_line(G, "if (mn != %s) { // else no key seen yet", ninf);
        cg_line(G, "    const float alpha = sh_exp2(m[x] - mn); // 0 while m is -inf");
        cg_line(G, "    l[x] *= alpha;");
        cg_line(G, "    u[x] *= alpha;");
        cg_line(G, "    #pragma unroll");
        cg_line(G, "    for (int n = 0; n < %d; n++) {", kt / 8);
        cg_line(G, "        #pragma unroll");
        cg_line(G, "        for (int y = 0; y < 2; y++) {");
        cg_line(G, "            const float p = sh_exp2(fmaf(sc[n][x * 2 + y], %s, -mn));", c2);
        cg_line(G, "            l[x] += p;");
        cg_line(G, "            u[x] = fmaf(p, dp[n][x * 2 + y], u[x]);");
        cg_line(G, "        }");
        cg_line(G, "    }");
        cg_line(G, "    m[x] = mn;");
        cg_line(G, "}");
        G->indent--;
        cg_line(G, "}");
    }
    G->indent--;
    cg_line(G, "}");
    if (dq) {
        mma_write(G, "dqa", scale, scale, cg_fmt(G, "p%d", op->nin), "q0", s, d, dt);
    } else {
        cg_line(G, "#pragma unroll");
        cg_line(G, "for (int x = 0; x < 2; x++) {");
        G->indent++;
        cg_line(G, "#pragma unroll");
        cg_line(G, "for (int o = 1; o <= 2; o <<= 1) { // the row's 4 lanes");
        cg_line(G, "    l[x] += __shfl_xor_sync(0xffffffffu, l[x], o);");
        cg_line(G, "    u[x] += __shfl_xor_sync(0xffffffffu, u[x], o);");
        cg_line(G, "}");
        cg_line(G, "const i64 row = q0 + gr + x * 8;");
        cg_line(G, "const i64 e = x ? eb : ea;");
        cg_line(G, "if (row < %lld && tq == 0) {", (long long)s);
        cg_line(G, "    p%d[(h * %lld + row) * 2] = e > 0 ? m[x] * %s + logf(l[x]) : 0.0f; // m "
                   "in base 2", op->nin, (long long)s, MMA_LN2);
        cg_line(G, "    p%d[(h * %lld + row) * 2 + 1] = e > 0 ? u[x] / l[x] : 0.0f;", op->nin,
                (long long)s);
        cg_line(G, "}");
        G->indent--;
        cg_line(G, "}");
    }
    G->indent--;
    cg_line(G, "}");
}

/* attn_dk's and attn_dv's query tiles from i0 in copy c (0 or 1, an
 * expression): q's and dy's rows by cp.async, committed, and their lse,
 * delta and ends stored (at_tile_stats). */
static void mma_query_copy(gen *G, const ir_op *op, const at_view *v, int qt, int ldk, int ldv,
                           int pdy, const char *c)
{
    tc_stage_async(G, cg_fmt(G, "(%s ? qs1 : qs0)", c), ldk, qt, "i0", 0, v->s, v->d,
                   "threadIdx.x", 32 * TC_WARPS);
    tc_stage_async(G, cg_fmt(G, "(%s ? ys1 : ys0)", c), ldv, qt, "i0", pdy, v->s, v->dv,
                   "threadIdx.x", 32 * TC_WARPS);
    cg_line(G, "sh_cp_commit();");
    cg_line(G, "float *const st = %s ? st1 : st0;", c);
    cg_line(G, "int *const es = %s ? es1 : es0;", c);
    at_tile_stats(G, op, v, pdy, qt, "st");
}

/* at_tiles_open with two copies of the query tiles (mma_query_copy): the
 * first copied before the loop, each next one while this one is used, a
 * barrier a tile; qs, ys, st and es this tile's. A barrier first: the
 * last unit's reads of the tiles are done (the warp's own rows staged
 * before are the warp's alone). */
static void mma_query_loop(gen *G, const ir_op *op, const at_view *v, int qt, int ldk, int ldv,
                           int pdy)
{
    const char *T = cg_ctype(G, v->dt);
    at_tiles_first(G, op, v, qt);
    cg_line(G, "__syncthreads(); // the last unit's tiles are read");
    cg_line(G, "if (i1 < %lld) { // the first tiles on their way in, into copy 0", (long long)v->s);
    G->indent++;
    cg_line(G, "const i64 i0 = i1;");
    mma_query_copy(G, op, v, qt, ldk, ldv, pdy, "0");
    G->indent--;
    cg_line(G, "}");
    cg_line(G, "for (i64 i0 = i1; i0 < %lld; i0 += %d) {", (long long)v->s, qt);
    G->indent++;
    cg_line(G, "const int cur = (int)((i0 - i1) / %d) & 1; // this tile's copy", qt);
    cg_line(G, "%s *const qs = cur ? qs1 : qs0;", T);
    cg_line(G, "%s *const ys = cur ? ys1 : ys0;", T);
    cg_line(G, "const float *const st = cur ? st1 : st0;");
    cg_line(G, "const int *const es = cur ? es1 : es0;");
    cg_line(G, "sh_cp_wait_all();");
    cg_line(G, "__syncthreads(); // this tile is in, and the other copy's (the last tile) read");
    cg_line(G, "if (i0 + %d < %lld) { // the next tiles, while this one is used", qt,
            (long long)v->s);
    G->indent++;
    cg_line(G, "const i64 i0n = i0 + %d;", qt);
    cg_line(G, "{");
    G->indent++;
    cg_line(G, "const i64 i0 = i0n;");
    mma_query_copy(G, op, v, qt, ldk, ldv, pdy, "!cur");
    G->indent--;
    cg_line(G, "}");
    G->indent--;
    cg_line(G, "}");
}

/* attn_dk (q, k, v, dy, st[, pos]) and attn_dv (q, k, dy, st[, pos]) on
 * tensor cores (see "attention on tensor cores"): a warp per 16 key rows,
 * k (and v) in fragments, tiles of the query rows, their dy rows, lse,
 * delta and end of the keys seen, started and skipped as emit_attn_cols'.
 * The scores and dp of a tile go through the scratch, p and ds = p (dp -
 * delta) come back over them as hi and lo, and p dy and ds q are added
 * into fragments, dk scaled by c at the end. With dv_too, op is attn_dk
 * and the kernel also sums attn_dv's p dy into p<nin + 1> (the pair), by
 * the same operations in the same order as attn_dv's own kernel. */
static void emit_attn_cols_wmma(gen *G, cg_cuda_kernel *k, const ir_op *op, bool dv_too)
{
    at_view v = at_view_of(op);
    int64_t s = v.s, d = v.d, t = v.t, dv = v.dv;
    bool dk = op->code == IR_ATTN_DK, sum_dv = !dk || dv_too;
    int pdy = dk ? 3 : 2;
    ir_dtype dt = v.dt;
    const char *T = cg_ctype(G, dt), *scale = cg_f32_text(G, v.scale);
    int ldk = (int)d + TC_PAD, ldv = (int)dv + TC_PAD;
    int64_t stage = 16 * (int64_t)(dk && ldv > ldk ? ldv : ldk) * 2;
    tc_geom a = tc_geom_of((ldk + ldv) * 2 + 12, (256 + 4) * 4, stage, dk ? 2 : 1);
    int qt = a.kt, ldp = qt + TC_PAD, lds = qt + 4, half = qt / 2;
    int64_t nkb = (t + TC_ROWS - 1) / TC_ROWS, total = v.heads / v.grp * nkb;
    int64_t o_ys = (int64_t)qt * ldk * 2, o_st = o_ys + (int64_t)qt * ldv * 2,
            o_es = o_st + (int64_t)qt * 8, o_ws = o_es + (int64_t)qt * 4,
            o_rid = o_ws + TC_WARPS * a.ws;
    tc_prologue(G, k, total, &a, T, o_rid);
    cg_line(G, "%s *const qs = (%s *)smb; // [%d queries][%d]: q's tile", T, T, qt, ldk);
    cg_line(G, "%s *const ys = (%s *)(smb + %lld); // [%d queries][%d]: their rows of dy", T, T,
            (long long)o_ys, qt, ldv);
    cg_line(G, "float *const st = (float *)(smb + %lld); // [%d queries][2]: their lse and delta",
            (long long)o_st, qt);
    cg_line(G, "int *const es = (int *)(smb + %lld); // [%d queries]: the end of the keys each "
               "sees", (long long)o_es, qt);
    cg_line(G, "// the warp's scratch: its k (and v) rows, or the scores [16][%d] f32 (then p's "
               "hi and lo [16][%d] each)%s, or a result tile",
            lds, ldp, dk ? cg_fmt(G, " and dp [16][%d] f32 (then ds' hi and lo)", lds) : "");
    cg_line(G, "unsigned char *const wsb = smb + %lld + warp * %lld;", (long long)o_ws,
            (long long)a.ws);
    cg_line(G, "%s *const stg = (%s *)wsb; // the warp's own rows on their way in", T, T);
    cg_line(G, "float *const ss = (float *)wsb;");
    if (sum_dv)
        cg_line(G, "%s *const phi = (%s *)wsb, *const plo = (%s *)(wsb + %d);", T, T, T,
                16 * ldp * 2);
    if (dk) {
        int64_t b = tc_region(qt);
        cg_line(G, "float *const dps = (float *)(wsb + %lld);", (long long)b);
        cg_line(G, "%s *const dhi = (%s *)(wsb + %lld), *const dlo = (%s *)(wsb + %lld);", T, T,
                (long long)b, T, (long long)(b + 16 * ldp * 2));
    }
    cg_line(G, "for (i64 bi = blockIdx.x; bi < %lld; bi += gridDim.x) {", (long long)total);
    G->indent++;
    cg_line(G, "const i64 %s = bi / %lld, j1 = bi %% %lld * %d, kw = j1 + warp * 16, j = kw + r; "
               "// head, the block's, the warp's and the lane's first key",
            v.grp > 1 ? "hk" : "h", (long long)nkb, (long long)nkb, TC_ROWS);
    tc_own_rows(G, "kf", "stg", "kw", 1, t, d);
    if (dk) {
        tc_own_rows(G, "vf", "stg", "kw", 2, t, dv);
        tc_zero(G, "dkf", d / 16, "sum ds q");
    }
    if (sum_dv)
        tc_zero(G, "dvf", dv / 16, "sum p dy");
    at_group_open(G);
    at_tiles_open(G, op, &v, qt);
    cg_line(G, "__syncthreads(); // the last tiles are read");
    tc_stage(G, "qs", ldk, qt, "i0", 0, s, d, "threadIdx.x", 32 * TC_WARPS);
    tc_stage(G, "ys", ldv, qt, "i0", pdy, s, dv, "threadIdx.x", 32 * TC_WARPS);
    at_tile_stats(G, op, &v, pdy, qt, "st");
    cg_line(G, "__syncthreads();");
    at_tile_skip(G, &v, qt);
    tc_products(G, "ss", lds, "kf", "qs", qt, d);
    if (dk)
        tc_products(G, "dps", lds, "vf", "ys", qt, dv);
    cg_line(G, "__syncwarp();");
    cg_line(G, "float pw[%d]; // the lane's weights", half);
    if (dk)
        cg_line(G, "float dw[%d];", half);
    tc_lanes_open(G, half, "the query row i0 + c");
    cg_line(G, "const bool seen = j < es[c]; // else row i does not see key j");
    cg_line(G, "const float p = seen ? expf(ss[r * %d + c] * %s - st[c * 2]) : 0.0f;", lds, scale);
    cg_line(G, "pw[jj] = p;");
    if (dk)
        cg_line(G, "dw[jj] = seen ? p * (dps[r * %d + c] - st[c * 2 + 1]) : 0.0f;", lds);
    tc_lanes_close(G);
    cg_line(G, "__syncwarp(); // the scores%s are read: the weights go over them",
            dk ? " and dp" : "");
    tc_lanes_open(G, half, NULL);
    if (sum_dv)
        tc_put_weight(G, "phi", "plo", ldp, "pw[jj]", dt);
    if (dk)
        tc_put_weight(G, "dhi", "dlo", ldp, "dw[jj]", dt);
    tc_lanes_close(G);
    cg_line(G, "__syncwarp();");
    if (sum_dv)
        tc_weighted(G, "dvf", "phi", "plo", ldp, "ys", qt, dv);
    if (dk)
        tc_weighted(G, "dkf", "dhi", "dlo", ldp, "qs", qt, d);
    G->indent--;
    cg_line(G, "}");
    at_group_close(G);
    cg_line(G, "__syncwarp(); // the last weights are read");
    const char *out = cg_fmt(G, "p%d", op->nin);
    if (dk)
        tc_write(G, "dkf", scale, "ss", out, "kw", t, d, dt);
    if (sum_dv)
        tc_write(G, "dvf", NULL, "ss", dk ? cg_fmt(G, "p%d", op->nin + 1) : out, "kw", t, dv, dt);
    G->indent--;
    cg_line(G, "}");
}

/* attn_dk and attn_dv on mma.sync (see "attention on tensor cores
 * through PTX"): emit_attn_cols_wmma's blocks, tiles and rules, with the
 * scores and dp of a warp's 16 key rows against a tile's queries in
 * registers; p and ds go back as A fragments, and the tiles of dy and q
 * are read transposed. With dv_too, op is attn_dk and the kernel also
 * sums attn_dv's p dy into p<nin + 1> (the pair), by the same operations
 * in the same order as attn_dv's own kernel. */
static void emit_attn_cols_mma(gen *G, cg_cuda_kernel *k, const ir_op *op, bool dv_too)
{
    at_view v = at_view_of(op);
    int64_t s = v.s, d = v.d, t = v.t, dv = v.dv;
    bool dk = op->code == IR_ATTN_DK, sum_dv = !dk || dv_too;
    int pdy = dk ? 3 : 2;
    ir_dtype dt = v.dt;
    bool x3 = dt == IR_F32; /* cg_attention_x3: the tiles' three bf16 parts */
    int parts = x3 ? MMA_PARTS : 1;
    const char *T = x3 ? "__nv_bfloat16" : cg_ctype(G, dt), *scale = cg_f32_text(G, v.scale);
    const char *mma = dt == IR_F16 ? "sh_mma_f16" : "sh_mma_bf16";
    int ldk = (int)d + TC_PAD, ldv = (int)dv + TC_PAD, qt = TC_KT;
    int ldw = dk && ldv > ldk ? ldv : ldk;
    int64_t bytes, tile;
    for (;;) {
        tile = (int64_t)qt * ((ldk + ldv) * 2 * parts + 12);
        bytes = tile + TC_WARPS * 16 * ldw * 2 + 128;
        if (bytes <= AT_SHARED || qt <= 16)
            break;
        qt /= 2;
    }
    /* two copies of the query tiles where they fit beside the rest at this
     * qt (16-bit tiles, copied as they are) */
    bool dbl = !x3 && bytes + tile <= AT_SHARED;
    int copies = dbl ? 2 : 1;
    bytes += (copies - 1) * tile;
    int64_t nkb = (t + TC_ROWS - 1) / TC_ROWS, total = v.heads / v.grp * nkb;
    int64_t o_ys = (int64_t)qt * ldk * 2 * parts, o_st = o_ys + (int64_t)qt * ldv * 2 * parts,
            o_es = o_st + (int64_t)qt * 8, o_ws = copies * tile;
    mma_prologue(G, k, total, bytes, false);
    const char *c = dbl ? "0" : "";
    if (x3) {
        G->bf16 = true;
        for (int p = 0; p < parts; p++) {
            cg_line(G, "%s *const %s = (%s *)(smb + %lld); // [%d queries][%d]: q's tile, part %d",
                    T, mma_part(G, "qs", p), T, (long long)p * qt * ldk * 2, qt, ldk, p);
            cg_line(G, "%s *const %s = (%s *)(smb + %lld); // [%d queries][%d]: their rows of "
                       "dy, part %d", T, mma_part(G, "ys", p), T,
                    (long long)(o_ys + (int64_t)p * qt * ldv * 2), qt, ldv, p);
        }
    } else {
        cg_line(G, "%s *const qs%s = (%s *)smb; // [%d queries][%d]: q's tile", T, c, T, qt, ldk);
        cg_line(G, "%s *const ys%s = (%s *)(smb + %lld); // [%d queries][%d]: their rows of dy",
                T, c, T, (long long)o_ys, qt, ldv);
    }
    cg_line(G, "float *const st%s = (float *)(smb + %lld); // [%d queries][2]: their lse and "
               "delta", c, (long long)o_st, qt);
    cg_line(G, "int *const es%s = (int *)(smb + %lld); // [%d queries]: the end of the keys each "
               "sees", c, (long long)o_es, qt);
    if (dbl) {
        cg_line(G, "// the second copy of each, the next tile's while this one is used");
        cg_line(G, "%s *const qs1 = (%s *)(smb + %lld);", T, T, (long long)tile);
        cg_line(G, "%s *const ys1 = (%s *)(smb + %lld);", T, T, (long long)(tile + o_ys));
        cg_line(G, "float *const st1 = (float *)(smb + %lld);", (long long)(tile + o_st));
        cg_line(G, "int *const es1 = (int *)(smb + %lld);", (long long)(tile + o_es));
    }
    cg_line(G, "%s *const stg = (%s *)(smb + %lld) + warp * %d; // the warp's own rows on their "
               "way in", T, T, (long long)o_ws, 16 * ldw);
    cg_line(G, "for (i64 bi = blockIdx.x; bi < %lld; bi += gridDim.x) {", (long long)total);
    G->indent++;
    cg_line(G, "const i64 %s = bi / %lld, j1 = bi %% %lld * %d, kw = j1 + warp * 16; // head, the "
               "block's and the warp's first key",
            v.grp > 1 ? "hk" : "h", (long long)nkb, (long long)nkb, TC_ROWS);
    cg_line(G, "const int ja = (int)(kw + gr), jb = ja + 8; // the lane's key rows a and b");
    if (x3)
        mma_own_rows_x3(G, "ka", "stg", "kw", 1, t, d);
    else
        mma_own_rows(G, "ka", "stg", "kw", 1, t, d);
    if (dk) {
        if (x3)
            mma_own_rows_x3(G, "va", "stg", "kw", 2, t, dv);
        else
            mma_own_rows(G, "va", "stg", "kw", 2, t, dv);
        mma_zero(G, "dka", d / 8, "sum ds q");
    }
    if (sum_dv) {
        mma_zero(G, "dva", dv / 8, "sum p dy");
    }
    at_group_open(G);
    if (dbl) {
        mma_query_loop(G, op, &v, qt, ldk, ldv, pdy);
    } else {
        at_tiles_open(G, op, &v, qt);
        cg_line(G, "__syncthreads(); // the last tiles are read");
        if (x3) { /* each tile's three bf16 parts */
            const char *qn[MMA_PARTS], *yn[MMA_PARTS];
            for (int p = 0; p < MMA_PARTS; p++) {
                qn[p] = mma_part(G, "qs", p);
                yn[p] = mma_part(G, "ys", p);
            }
            tc_stage_x3(G, qn, ldk, qt, "i0", 0, s, d, "threadIdx.x", 32 * TC_WARPS, -1);
            tc_stage_x3(G, yn, ldv, qt, "i0", pdy, s, dv, "threadIdx.x", 32 * TC_WARPS, -1);
        } else {
            tc_stage(G, "qs", ldk, qt, "i0", 0, s, d, "threadIdx.x", 32 * TC_WARPS);
            tc_stage(G, "ys", ldv, qt, "i0", pdy, s, dv, "threadIdx.x", 32 * TC_WARPS);
        }
        at_tile_stats(G, op, &v, pdy, qt, "st");
        cg_line(G, "__syncthreads();");
    }
    at_tile_skip(G, &v, qt);
    if (x3) {
        mma_products_x3(G, "sc", "ka", "qs", ldk, qt, d);
        if (dk)
            mma_products_x3(G, "dp", "va", "ys", ldv, qt, dv);
    } else {
        mma_products(G, "sc", "ka", "qs", ldk, qt, d, mma);
        if (dk)
            mma_products(G, "dp", "va", "ys", ldv, qt, dv, mma);
    }
    /* element e of tile n: key row e < 2 ? ja : jb, query column n * 8 +
     * 2 tq + (e & 1); p over sc and ds over dp, in place */
    cg_line(G, "#pragma unroll");
    cg_line(G, "for (int n = 0; n < %d; n++) {", qt / 8);
    G->indent++;
    cg_line(G, "const int2 ev = *(const int2 *)(es + n * 8 + tq * 2); // the two columns' ends");
    cg_line(G, "const float4 sv = *(const float4 *)(st + (n * 8 + tq * 2) * 2); // their lse, delta");
    cg_line(G, "#pragma unroll");
    cg_line(G, "for (int e = 0; e < 4; e++) {");
    G->indent++;
    cg_line(G, "const bool seen = (e < 2 ? ja : jb) < (e & 1 ? ev.y : ev.x);");
    cg_line(G, "const float p = seen ? sh_exp2(fmaf(sc[n][e], %s, (e & 1 ? sv.z : sv.x) * -%s)) : "
               "0.0f;", mma_c2(G, &v), MMA_LOG2E);
    cg_line(G, "sc[n][e] = p;");
    if (dk)
        cg_line(G, "dp[n][e] = seen ? p * (dp[n][e] - (e & 1 ? sv.w : sv.y)) : 0.0f;");
    G->indent--;
    cg_line(G, "}");
    G->indent--;
    cg_line(G, "}");
    cg_line(G, "#pragma unroll");
    cg_line(G, "for (int kk = 0; kk < %d; kk++) { // 16 queries of the tile", qt / 16);
    G->indent++;
    if (sum_dv && x3) {
        mma_weights_x3(G, "pw", "sc[n][e]", NULL);
        mma_weighted_x3(G, "dva", "pw", "ys", ldv, dv);
    } else if (sum_dv) {
        mma_weights(G, "ph", "sc[n][e]", NULL, dt);
        mma_weighted(G, "dva", "ph", "ys", ldv, dv, mma);
    }
    if (dk && x3) {
        mma_weights_x3(G, "dw", "dp[n][e]", NULL);
        mma_weighted_x3(G, "dka", "dw", "qs", ldk, d);
    } else if (dk) {
        mma_weights(G, "dh", "dp[n][e]", NULL, dt);
        mma_weighted(G, "dka", "dh", "qs", ldk, d, mma);
    }
    G->indent--;
    cg_line(G, "}");
    G->indent--;
    cg_line(G, "}");
    at_group_close(G);
    const char *out = cg_fmt(G, "p%d", op->nin);
    if (dk)
        mma_write(G, "dka", scale, scale, out, "kw", t, d, dt);
    if (sum_dv)
        mma_write(G, "dva", "1.0f", "1.0f", dk ? cg_fmt(G, "p%d", op->nin + 1) : out, "kw", t, dv,
                  dt);
    G->indent--;
    cg_line(G, "}");
}

/* The signature: p0, p1, ... the operands (const) and the result, then
 * extra, a second result (the pair's attn_dv), when not NULL. */
static void op_signature(gen *G, const cg_cuda_kernel *k, const ir_op *op, const ir_value *extra,
                         su_buf *b)
{
    bool raw = op->code == IR_TRANSPOSE || op->code == IR_EMBEDDING || op->code == IR_NARROW ||
               op->code == IR_CONCAT;
    su_buf_printf(b, "extern \"C\" __global__ void __launch_bounds__(%d)\n%s(", k->block, k->name);
    for (int i = 0; i <= op->nin + (extra != NULL); i++) {
        const ir_value *v = i < op->nin ? op->in[i] : i == op->nin ? op->res[0] : extra;
        bool id = v->type.dtype == IR_I32;
        const char *ty = id ? "int" : raw ? word(v->type.dtype) : cg_ctype(G, v->type.dtype);
        su_buf_printf(b, "%s%s%s *__restrict__ p%d", i ? ",\n    " : "\n    ",
                      i < op->nin ? "const " : "", ty, i);
    }
    su_buf_puts(b, ")\n{\n");
}

/* How the kernel's threads split the op's work, for its header. */
static const char *op_launch_text(const gen *G, const cg_cuda_kernel *k, const ir_op *op)
{
    switch (op->code) {
    case IR_TRANSPOSE:
        return k->strategy == CG_CUDA_ROW ? "a block per 32 x 32 tile, through shared memory, "
                                            "grid-stride over tiles"
               : k->vec > 1 ? "one thread per word of a run of the last dim, grid-stride"
                            : "one thread per element of the result, grid-stride";
    case IR_EMBEDDING_GRAD:
        return "a block per unit of table rows and columns, the ids read in tiles in index "
               "order and the unit's listed in shared memory, grid-stride";
    case IR_ATTENTION:
    case IR_ATTN_LSE:
        if (cg_attention_x3(G, op))
            return "a block per 64 query rows of a head, 16 a warp, on tensor cores (mma.sync), "
                   "each f32 as three bf16 parts and each product as six, keys in shared tiles, "
                   "online softmax with the scores in registers; assumes 16-byte aligned buffers";
        if (cg_attention_mma(G, op))
            return "a block per 64 query rows of a head, 16 a warp, on tensor cores (mma.sync), "
                   "keys in shared tiles, online softmax with the scores in registers; assumes "
                   "16-byte aligned buffers";
        if (cg_attention_wmma(G, op))
            return "a block per 64 query rows of a head, 16 a warp, on tensor cores (WMMA), "
                   "keys in shared tiles, online softmax; assumes 16-byte aligned buffers";
        /* fall through */
    case IR_ATTN_PROBS:
        return cg_attention_tiled(op)
                   ? "a block per 128 / group query rows of a head, keys in shared tiles, online "
                     "softmax"
                   : "one block per query row, grid-stride over rows";
    case IR_ATTN_DELTA:
        return k->vec > 1 ? "a row of a head a vector a lane (16 bytes), 8 warps a block, "
                            "grid-stride; assumes 16-byte aligned buffers"
                          : "a warp per row of a head, 8 a block, grid-stride";
    case IR_SPLIT3:
        return k->vec > 1 ? "4 elements of the operand a thread, their three parts written, "
                            "grid-stride; assumes 16-byte aligned buffers"
                          : "one thread per element of the operand, its three parts written, "
                            "grid-stride";
    case IR_ATTN_STATS:
    case IR_ATTN_DQ:
        if (cg_attention_x3(G, op))
            return "a block per 64 query rows of a head, 16 a warp, on tensor cores (mma.sync), "
                   "each f32 as three bf16 parts and each product as six, keys and values in "
                   "shared tiles, the scores and dp in registers; assumes 16-byte aligned buffers";
        if (cg_attention_mma(G, op))
            return "a block per 64 query rows of a head, 16 a warp, on tensor cores (mma.sync), "
                   "keys and values in shared tiles, the scores and dp in registers; assumes "
                   "16-byte aligned buffers";
        if (cg_attention_wmma(G, op))
            return "a block per 64 query rows of a head, 16 a warp, on tensor cores (WMMA), keys "
                   "and values in shared tiles; assumes 16-byte aligned buffers";
        return op->code == IR_ATTN_STATS
                   ? "a block per 128 / group query rows of a head, keys and values in shared "
                     "tiles, online softmax"
                   : "a block per 128 / group query rows of a head, keys and values in shared "
                     "tiles, p from the statistics";
    case IR_ATTN_DK:
    case IR_ATTN_DV:
        if (cg_attention_x3(G, op))
            return "a block per 64 keys of a head, 16 a warp, on tensor cores (mma.sync), each f32 "
                   "as three bf16 parts and each product as six, query rows, dy and the "
                   "statistics in shared tiles, the scores and dp in registers; assumes 16-byte "
                   "aligned buffers";
        if (cg_attention_mma(G, op))
            return "a block per 64 keys of a head, 16 a warp, on tensor cores (mma.sync), query "
                   "rows, dy and the statistics in shared tiles, the scores and dp in registers; "
                   "assumes 16-byte aligned buffers";
        if (cg_attention_wmma(G, op))
            return "a block per 64 keys of a head, 16 a warp, on tensor cores (WMMA), query rows, "
                   "dy and the statistics in shared tiles; assumes 16-byte aligned buffers";
        return "a block per 128 / group keys of a head, query rows, dy and the statistics in "
               "shared tiles, p from the statistics";
    case IR_EMBEDDING:
        return k->vec > 1 ? "one thread per 16 bytes of a row of the result, grid-stride; "
                            "assumes 16-byte aligned buffers"
                          : "one thread per element of the result, grid-stride";
    default:
        return "one thread per element of the result, grid-stride";
    }
}

/* The header comment: the op, its operands, the launch; with pair, the
 * attn_dv op that op, attn_dk, also computes. */
static void op_header(gen *G, const cg_cuda_kernel *k, const ir_op *op, const ir_op *pair,
                      su_buf *b)
{
    const char *pname = pair ? ir_ops[pair->code].name : NULL;
    bool fwd = pair && pair->code == IR_ATTN_LSE; /* attention with its lse */
    su_buf_printf(b, "// %s: %s kernel of %s%s%s over ", k->name,
                  cg_cuda_strategy_name(k->strategy), ir_ops[op->code].name, pair ? " and " : "",
                  pair ? pname : "");
    cg_put_shape(b, &op->res[0]->type);
    su_buf_putc(b, '\n');
    if (pair && !fwd)
        cg_put_op_line(G, b, pair);
    cg_put_op_line(G, b, op);
    if (fwd)
        cg_put_op_line(G, b, pair);
    if (pair)
        su_buf_printf(b, "// parameters: %s's operands p0 .. p%d, its result p%d, %s's result "
                         "p%d\n",
                      ir_ops[op->code].name, op->nin - 1, op->nin, pname, op->nin + 1);
    else if (op->nin)
        su_buf_printf(b, "// parameters: the operand%s p0%s, the result p%d\n",
                      op->nin > 1 ? "s" : "",
                      op->nin > 2 ? cg_fmt(G, " .. p%d", op->nin - 1) : op->nin > 1 ? ", p1" : "",
                      op->nin);
    else
        su_buf_puts(b, "// parameter: the result p0\n");
    su_buf_printf(b, "// launch: grid (%lld, 1, 1), block (%d, 1, 1), %d bytes of dynamic shared "
                     "memory\n",
                  (long long)k->grid, k->block, k->shared_bytes);
    su_buf_printf(b, "// %s%s\n", op_launch_text(G, k, op),
                  fwd    ? "; each row's log-sum-exp from its max and sum"
                  : pair ? "; each p once for both sums"
                         : "");
    if (op->code == IR_EMBEDDING || op->code == IR_EMBEDDING_GRAD)
        su_buf_puts(b, "// an id outside the table: its row NaN, and the lowest such index in "
                       "sh_error\n");
    if (op->code == IR_CHECK_IDS || op->code == IR_CHECK_LABELS)
        su_buf_puts(b, "// an id outside [0, bound): the lowest such index in sh_error\n");
    if (op->code == IR_DIV)
        su_buf_puts(b, "// a zero divisor: the lowest such result index in sh_error\n");
}

/* k's source: the header, the prelude, the signature and body (freed
 * here); pair as op_header's. */
static void op_source(gen *G, cg_cuda_kernel *k, const ir_op *op, const ir_op *pair, su_buf *body)
{
    su_buf b, sig;
    su_buf_init_in(&b, G->arena);
    su_buf_init_in(&sig, G->arena);
    op_signature(G, k, op, pair ? pair->res[0] : NULL, &sig); /* first: it names the dtypes */
    op_header(G, k, op, pair, &b);
    cg_put_prelude(G, &b);
    su_buf_puts(&b, sig.s);
    su_buf_puts(&b, body->s ? body->s : "");
    su_buf_puts(&b, "}\n");
    k->source = su_strdup(G->arena, b.s);
    su_buf_free(&sig);
    su_buf_free(&b);
    su_buf_free(body);
}

/* Attention's layouts: the pins that hold their heads inner (heads_inner's
 * operands, and its result: p<nin>; of a pair, attn_dv dv's result after
 * it by dv's), with q's heads (attn_delta's y's), H; and grouped-query
 * attention (ir_attn_group): the group of op's kernel and the pins with
 * the key heads: k (p1), v (p2, but attn_dv's dy), and attn_dk's and
 * attn_dv's result. */
static void at_groups(gen *G, const ir_op *op, const ir_op *dv)
{
    bool pair = dv != NULL;
    unsigned h = op->a->heads_inner | (dv ? dv->a->heads_inner & IR_HEADS_RESULT : 0);
    G->at_inner = (op->a->heads_inner & (IR_HEADS_RESULT - 1)) |
                  (op->a->heads_inner & IR_HEADS_RESULT ? 1u << op->nin : 0) |
                  (dv && (dv->a->heads_inner & IR_HEADS_RESULT) ? 1u << (op->nin + 1) : 0);
    G->at_heads = 0;
    if (h) {
        ir_type lq = ir_heads_in(op, 0) ? ir_type_swap_heads(&op->in[0]->type) : op->in[0]->type;
        G->at_heads = lq.rank >= 3 ? lq.dim[lq.rank - 3] : 0;
    }
    G->at_grp = ir_attn_group(op);
    G->at_kv = 1u << 1;
    if (op->code == IR_ATTENTION || op->code == IR_ATTN_STATS || op->code == IR_ATTN_DQ ||
        op->code == IR_ATTN_DK)
        G->at_kv |= 1u << 2;
    if (op->code == IR_ATTN_DK || op->code == IR_ATTN_DV)
        G->at_kv |= 1u << op->nin | (pair ? 1u << (op->nin + 1) : 0);
}

/* The kernel of op i, numbered id. */
void cg_gen_op_kernel(gen *G, cg_cuda_kernel *k, const ir_op *op, int i, int id)
{
    k->name = G->canon ? "K" : cg_op_kernel_name(G->arena, op, id);
    k->group = -1;
    k->op = i;
    k->nparams = op->nin + 1;
    k->params = su_alloc(G->arena, (size_t)(k->nparams + 1) * sizeof *k->params);
    for (int j = 0; j < op->nin; j++)
        k->params[j] = op->in[j];
    k->params[op->nin] = op->res[0];
    su_buf body;
    su_buf_init_in(&body, G->arena);
    G->b = &body;
    G->indent = 1;
    /* attention's operands with the heads inner: H is the stored dim -2 of
     * q (passes/fold.c makes such ops only where the tiled kernels take
     * the widths) */
    at_groups(G, op, NULL);
    if (op->a->heads_inner && op->code != IR_ATTN_DELTA && !cg_attention_tiled(op))
        su_unreachable();
    switch (op->code) {
    case IR_ATTN_DELTA: emit_attn_delta(G, k, op); break;
    case IR_TRANSPOSE: emit_transpose(G, k, op); break;
    case IR_IOTA: emit_iota(G, k, op); break;
    case IR_CHECK_IDS:
    case IR_CHECK_LABELS: emit_check(G, k, op); break;
    case IR_AMAX:
    case IR_SUM: emit_reduce_i32(G, k, op); break;
    case IR_DIV: emit_div_i32(G, k, op); break;
    case IR_EMBEDDING: emit_embedding(G, k, op); break;
    case IR_EMBEDDING_GRAD: emit_embedding_grad(G, k, op); break;
    case IR_NARROW:
    case IR_CONCAT: emit_narrow_concat(G, k, op); break;
    case IR_DROPOUT: emit_dropout(G, k, op); break;
    case IR_SPLIT3: emit_split3(G, k, op); break;
    case IR_ATTN_STATS:
    case IR_ATTN_DQ:
        if (cg_attention_mma(G, op) || cg_attention_x3(G, op))
            emit_attn_rows_mma(G, k, op);
        else if (cg_attention_wmma(G, op))
            emit_attn_rows_wmma(G, k, op);
        else
            emit_attn_rows(G, k, op);
        break;
    case IR_ATTN_DK:
    case IR_ATTN_DV:
        if (cg_attention_mma(G, op) || cg_attention_x3(G, op))
            emit_attn_cols_mma(G, k, op, false);
        else if (cg_attention_wmma(G, op))
            emit_attn_cols_wmma(G, k, op, false);
        else
            emit_attn_cols(G, k, op, false);
        break;
    default:
        if (cg_attention_mma(G, op) || cg_attention_x3(G, op))
            emit_attention_mma(G, k, op, NULL);
        else if (cg_attention_wmma(G, op))
            emit_attention_wmma(G, k, op, NULL);
        else if (cg_attention_tiled(op))
            emit_attention_tiled(G, k, op, NULL);
        else
            emit_attention(G, k, op);
        break;
    }
    G->at_heads = 0;
    G->at_grp = 0;
    G->at_inner = 0;
    op_source(G, k, op, NULL, &body);
}

/* The kernel of pair group g (passes/fuse.h): attn_dv (its first op) and
 * attn_dk (its anchor) of one attention, one pass over the query rows
 * (emit_attn_cols): the parameters are attn_dk's operands p0 .., its
 * result, then attn_dv's result. Of an attention-with-lse group:
 * attention (its first op) and attn_lse (its anchor), the forward's
 * kernel writing the lse too: attention's operands, its result, then
 * attn_lse's. */
void cg_attn_pair_params(const ir_module *m, const pass_fgroup *g, cg_cuda_kernel *k, su_arena *a)
{
    const ir_op *dv = IR_OP(m, g->ops[0]), *op = IR_OP(m, g->anchor);
    if (g->kind == PASS_FUSE_ATTN_LSE) {
        const ir_op *t = dv;
        dv = op; /* the second result's op */
        op = t;
    }
    k->nparams = op->nin + 2;
    k->params = su_alloc(a, (size_t)(k->nparams + 1) * sizeof *k->params);
    for (int j = 0; j < op->nin; j++)
        k->params[j] = op->in[j];
    k->params[op->nin] = op->res[0];
    k->params[op->nin + 1] = dv->res[0];
}

void cg_gen_attn_pair(gen *G, cg_cuda_kernel *k, const pass_fgroup *g)
{
    const ir_op *dv = IR_OP(G->m, g->ops[0]), *op = IR_OP(G->m, g->anchor);
    bool fwd = g->kind == PASS_FUSE_ATTN_LSE;
    if (fwd) { /* op attention, dv its attn_lse */
        const ir_op *t = dv;
        dv = op;
        op = t;
    }
    k->name = G->canon ? "K" : g->name;
    k->group = g->id;
    k->op = -1;
    cg_attn_pair_params(G->m, g, k, G->arena);
    su_buf body;
    su_buf_init_in(&body, G->arena);
    G->b = &body;
    G->indent = 1;
    at_groups(G, op, fwd ? NULL : dv);
    if (!cg_attention_tiled(op))
        su_unreachable(); /* fuse.c pairs only such ops */
    const char *lse = cg_fmt(G, "p%d", op->nin + 1);
    if (fwd && (cg_attention_mma(G, op) || cg_attention_x3(G, op)))
        emit_attention_mma(G, k, op, lse);
    else if (fwd && cg_attention_wmma(G, op))
        emit_attention_wmma(G, k, op, lse);
    else if (fwd)
        emit_attention_tiled(G, k, op, lse);
    else if (cg_attention_mma(G, op) || cg_attention_x3(G, op))
        emit_attn_cols_mma(G, k, op, true);
    else if (cg_attention_wmma(G, op))
        emit_attn_cols_wmma(G, k, op, true);
    else
        emit_attn_cols(G, k, op, true);
    G->at_heads = 0;
    G->at_grp = 0;
    G->at_inner = 0;
    op_source(G, k, op, dv, &body);
}

const char *cg_op_kernel_name(su_arena *a, const ir_op *op, int id)
{
    return su_sprintf(a, "k%d_%s", id, ir_ops[op->code].name);
}
