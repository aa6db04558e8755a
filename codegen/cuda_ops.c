/* cuda_ops.c: the kernels of single ops that a GPU needs one for outside
 * the fused groups (cg_cuda_op_kernel): transpose, iota, embedding and its
 * gradient, attention. */
#include "cuda_gen.h"

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
 * thread per element of the table, so no atomics and the same bits in
 * f32), attention and attn_probs take one block per query row (scores in
 * shared memory, the row's max and sum by block reductions). An id outside
 * the table makes the row NaN (so the rest of the step stays
 * deterministic) and is recorded in the module's error word, sh_error
 * (the helper X_ERROR): the runtime reads it after the step and fails
 * with the CPU backend's message (runtime/cuda/cuda_step.h). */

enum { BLOCK_OP = 256 };

bool cg_cuda_op_kernel(const ir_op *op)
{
    switch (op->code) {
    case IR_TRANSPOSE:
    case IR_EMBEDDING:
    case IR_IOTA:
        return op->nres == 1;
    case IR_EMBEDDING_GRAD:
    case IR_ATTENTION:
    case IR_ATTN_PROBS:
        return op->nres == 1 && op->res[0]->type.dtype != IR_I32;
    default:
        return false;
    }
}

/* The raw word of a dtype's size, for ops that only move elements. */
static const char *word(ir_dtype t)
{
    return ir_dtype_size(t) == 2 ? "unsigned short" : "unsigned int";
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
 * each a digit of input dim perm[i] (dims of size 1 skipped). */
static void emit_transpose(gen *G, cg_cuda_kernel *k, const ir_op *op)
{
    const ir_type *x = &op->in[0]->type, *y = &op->res[0]->type;
    int64_t istr[IR_MAX_RANK], acc = 1;
    for (int i = x->rank - 1; i >= 0; i--) {
        istr[i] = acc;
        acc *= x->dim[i];
    }
    elementwise_loop(G, k, ir_type_numel(y));
    cg_line(G, "i64 r = e, src = 0;");
    for (int i = y->rank - 1; i >= 0; i--) {
        if (y->dim[i] == 1)
            continue;
        cg_line(G, "src += (r %% %lld) * %lld; // result dim %d is input dim %lld",
             (long long)y->dim[i], (long long)istr[op->a.list[i]], i, (long long)op->a.list[i]);
        cg_line(G, "r /= %lld;", (long long)y->dim[i]);
    }
    cg_line(G, "p1[e] = p0[src];");
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

/* embedding (table [V, D], ids): row ids[e / D] of the table. */
static void emit_embedding(gen *G, cg_cuda_kernel *k, const ir_op *op)
{
    const ir_type *t = &op->in[0]->type;
    int64_t v = t->dim[0], d = t->dim[1];
    G->helpers |= H_ERROR;
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
 * dy[i, col] over the i with ids[i] == row, in index order. */
static void emit_embedding_grad(gen *G, cg_cuda_kernel *k, const ir_op *op)
{
    const ir_type *y = &op->res[0]->type;
    int64_t v = y->dim[0], d = y->dim[1], n = ir_type_numel(&op->in[0]->type);
    ir_dtype dt = y->dtype;
    G->helpers |= H_ERROR;
    elementwise_loop(G, k, v * d);
    cg_line(G, "const i64 row = e / %lld, col = e %% %lld;", (long long)d, (long long)d);
    cg_line(G, "float acc = 0.0f;");
    cg_line(G, "for (i64 i = 0; i < %lld; i++) {", (long long)n);
    cg_line(G, "    const int id = p0[i];");
    cg_line(G, "    if (id < 0 || id >= %lld) { // outside the table: NaN, and the runtime's error",
         (long long)v);
    cg_line(G, "        acc = __int_as_float(0x7fc00000);");
    cg_line(G, "        if (e == 0)");
    cg_line(G, "            sh_bad_id(i, id);");
    cg_line(G, "    } else if (id == row) {");
    cg_line(G, "        acc += %s;", cg_load_conv(G, dt, cg_fmt(G, "p1[i * %lld + col]", (long long)d)));
    cg_line(G, "    }");
    cg_line(G, "}");
    cg_line(G, "p2[e] = %s;", cg_store_conv(G, dt, "acc"));
    G->indent--;
    cg_line(G, "}");
}

/* attention (q, k, v[, pos]) and attn_probs (q, k[, pos]): one block per
 * query row of a head: the scores q.k * scale of the keys it sees (causal:
 * j <= pos[i], or without pos the mask aligned to the end, as
 * runtime/cpu/cpu_matmul.c's), their softmax, then the row of p @ v, or of p. */
static void emit_attention(gen *G, cg_cuda_kernel *k, const ir_op *op)
{
    const ir_type *q = &op->in[0]->type;
    int r = q->rank;
    int64_t s = q->dim[r - 2], d = q->dim[r - 1], t = op->in[1]->type.dim[r - 2];
    int64_t heads = ir_type_numel(q) / (s * d);
    bool probs = op->code == IR_ATTN_PROBS;
    int64_t dv = probs ? t : op->in[2]->type.dim[r - 1];
    bool pos = op->nin > (probs ? 2 : 3); /* the query positions, the last operand */
    ir_dtype dt = q->dtype;
    float scale = (float)(1.0 / sqrt((double)d));
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
    if (op->a.causal && pos)
        cg_line(G, "const i64 end = min(max((i64)p%d[i] + 1, (i64)0), (i64)%lld); // keys [0, end)",
             op->nin - 1, (long long)t);
    else if (op->a.causal)
        cg_line(G, "const i64 end = min(max(i + %lld, (i64)0), (i64)%lld); // keys [0, end)",
             (long long)(t - s + 1), (long long)t);
    else
        cg_line(G, "const i64 end = %lld;", (long long)t);
    cg_line(G, "for (i64 j = threadIdx.x; j < end; j += blockDim.x) {");
    cg_line(G, "    float acc = 0.0f;");
    cg_line(G, "    for (i64 c = 0; c < %lld; c++)", (long long)d);
    cg_line(G, "        acc += %s * %s;", cg_load_conv(G, dt, cg_fmt(G, "p0[row * %lld + c]", (long long)d)),
         cg_load_conv(G, dt, cg_fmt(G, "p1[(h * %lld + j) * %lld + c]", (long long)t, (long long)d)));
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
             cg_load_conv(G, dt, cg_fmt(G, "p2[(h * %lld + j) * %lld + c]", (long long)t,
                                  (long long)dv)));
        cg_line(G, "    %s[row * %lld + c] = %s;", out, (long long)dv,
             cg_store_conv(G, dt, cg_round_to(G, dt, "acc")));
        cg_line(G, "}");
    }
    cg_line(G, "__syncthreads(); // sc is the next row's");
    G->indent--;
    cg_line(G, "}");
}

/* The signature: p0, p1, ... the operands (const) and the result. */
static void op_signature(gen *G, const cg_cuda_kernel *k, const ir_op *op, su_buf *b)
{
    bool raw = op->code == IR_TRANSPOSE || op->code == IR_EMBEDDING;
    su_buf_printf(b, "extern \"C\" __global__ void __launch_bounds__(%d)\n%s(", k->block, k->name);
    for (int i = 0; i <= op->nin; i++) {
        const ir_value *v = i < op->nin ? op->in[i] : op->res[0];
        bool id = v->type.dtype == IR_I32;
        const char *ty = id ? "int" : raw ? word(v->type.dtype) : cg_ctype(G, v->type.dtype);
        su_buf_printf(b, "%s%s%s *__restrict__ p%d", i ? ",\n    " : "\n    ",
                      i < op->nin ? "const " : "", ty, i);
    }
    su_buf_puts(b, ")\n{\n");
}

/* The header comment: the op, its operands, the launch. */
static void op_header(gen *G, const cg_cuda_kernel *k, const ir_op *op, su_buf *b)
{
    su_buf_printf(b, "// %s: %s kernel of %s over ", k->name, cg_cuda_strategy_name(k->strategy),
                  ir_ops[op->code].name);
    cg_put_shape(b, &op->res[0]->type);
    su_buf_putc(b, '\n');
    cg_put_op_line(G, b, op);
    if (op->nin)
        su_buf_printf(b, "// parameters: the operand%s p0%s, the result p%d\n",
                      op->nin > 1 ? "s" : "",
                      op->nin > 2 ? cg_fmt(G, " .. p%d", op->nin - 1) : op->nin > 1 ? ", p1" : "",
                      op->nin);
    else
        su_buf_puts(b, "// parameter: the result p0\n");
    su_buf_printf(b, "// launch: grid (%lld, 1, 1), block (%d, 1, 1), %d bytes of dynamic shared "
                     "memory\n",
                  (long long)k->grid, k->block, k->shared_bytes);
    su_buf_puts(b, k->strategy == CG_CUDA_ROW
                       ? "// one block per query row, grid-stride over rows\n"
                       : "// one thread per element of the result, grid-stride\n");
    if (op->code == IR_EMBEDDING || op->code == IR_EMBEDDING_GRAD)
        su_buf_puts(b, "// an id outside the table: its row NaN, and the lowest such index in "
                       "sh_error\n");
}

/* The kernel of op i, numbered id. */
void cg_gen_op_kernel(gen *G, cg_cuda_kernel *k, const ir_op *op, int i, int id)
{
    k->name = G->canon ? "K" : su_sprintf(G->arena, "k%d_%s", id, ir_ops[op->code].name);
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
    switch (op->code) {
    case IR_TRANSPOSE: emit_transpose(G, k, op); break;
    case IR_IOTA: emit_iota(G, k, op); break;
    case IR_EMBEDDING: emit_embedding(G, k, op); break;
    case IR_EMBEDDING_GRAD: emit_embedding_grad(G, k, op); break;
    default: emit_attention(G, k, op); break;
    }
    su_buf b, sig;
    su_buf_init_in(&b, G->arena);
    su_buf_init_in(&sig, G->arena);
    op_signature(G, k, op, &sig); /* first: it names the dtypes it needs */
    op_header(G, k, op, &b);
    cg_put_prelude(G, &b);
    su_buf_puts(&b, sig.s);
    su_buf_puts(&b, body.s ? body.s : "");
    su_buf_puts(&b, "}\n");
    k->source = su_strdup(G->arena, b.s);
    su_buf_free(&sig);
    su_buf_free(&b);
    su_buf_free(&body);
}
