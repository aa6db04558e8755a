/* cost.c: what one op of a partitioned program costs a rank: its FLOPs,
 * and for a collective its per-rank element count and the bytes sent as
 * nccl-tests counts them (all_reduce 2(n-1)/n, all_gather,
 * reduce_scatter and all_to_all (n-1)/n, times elements x dtype size).
 *
 * FLOPs are counted per op on local shapes: matmul 2*M*N*K (per batch);
 * attention 2*S*T*(d + dv) per head plus 5*S*T for its softmax; its
 * backward's ops, per head and pair of a query and a key, what their
 * kernels do: attn_stats and attn_dv 2(d + dv) + 5 (the score, its exp,
 * and a product of dv or d terms), attn_dq and attn_dk 4d + 2dv + 7 (the
 * score, dp, ds and the sum); attn_lse 2d + 3 (the score and its exp),
 * attn_delta 2 per element of y; softmax
 * 5, layernorm 8, rmsnorm 5, layernorm_rstd 4 (the mean's sum, x - mean,
 * its square and their sum), rmsnorm_rstd 2, mse 3, cross_entropy 5,
 * cross_entropy_lse 4 (the max, x - max, its exp and their sum) and
 * cross_entropy_grad 5, or 3 from a given lse (x - lse, its exp, the
 * label's one subtracted), per input element;
 * other elementwise ops and reductions 1 per element; layout ops,
 * constants and communication 0. */
#include "passes.h"

#include <string.h>

/* Operand i of attention or its backward as the op computes on it: with
 * its heads inner (ir_heads_in), the stored [.., S, H, d] as [.., H, S, d]. */
static ir_type logical(const ir_op *op, int i)
{
    const ir_type *t = &op->in[i]->type;
    return ir_heads_in(op, i) ? ir_type_swap_heads(t) : *t;
}

/* An attention backward op's (query, key) pairs over every head, and its
 * widths d (q's) and dv (dy's). */
static void attn_back_dims(const ir_op *op, double *pairs, double *d, double *dv)
{
    ir_type lq = logical(op, 0), lk = logical(op, 1);
    const ir_type *q = &lq, *k = &lk;
    double s = (double)q->dim[q->rank - 2];
    *d = (double)q->dim[q->rank - 1];
    double heads = (double)ir_type_numel(&op->in[0]->type) / (s * *d);
    *pairs = heads * s * (double)k->dim[k->rank - 2];
    *dv = (double)op->in[op->code == IR_ATTN_DV ? 2 : 3]->type.dim[q->rank - 1];
}

double pass_attn_pair_flops(const ir_op *dk)
{
    double pairs, d, dv;
    attn_back_dims(dk, &pairs, &d, &dv);
    return pairs * (4 * d + 4 * dv + 7); /* attn_dk's, and p dy: each p once */
}

double pass_op_flops(const ir_op *op)
{
    const ir_type *r = &op->res[0]->type;
    double out = (double)ir_type_numel(r);
    double in0 = op->nin ? (double)ir_type_numel(&op->in[0]->type) : 0;
    switch (op->code) {
    case IR_MATMUL: { /* K: a's last dim, or the one before it read transposed; a
                       * matmul of parts counts the f32 product's (K its parts' third) */
        const ir_type *a = &op->in[0]->type;
        double k = (double)a->dim[a->rank - 1 - (op->a->trans & IR_TRANS_A ? 1 : 0)];
        return 2 * out * (op->a->parts ? k / 3 : k);
    }
    case IR_ATTENTION: {
        ir_type lq = logical(op, 0), lk = logical(op, 1), lv = logical(op, 2);
        const ir_type *q = &lq, *k = &lk, *v = &lv;
        double heads = in0 / ((double)q->dim[q->rank - 2] * (double)q->dim[q->rank - 1]);
        double st = (double)q->dim[q->rank - 2] * (double)k->dim[k->rank - 2];
        return heads * st * (2 * ((double)q->dim[q->rank - 1] + (double)v->dim[v->rank - 1]) + 5);
    }
    case IR_ATTN_PROBS: { /* q @ kT, then softmax */
        const ir_type *q = &op->in[0]->type;
        return 2 * out * (double)q->dim[q->rank - 1] + 5 * out;
    }
    case IR_ATTN_LSE: {
        ir_type lq = logical(op, 0), lk = logical(op, 1);
        double heads = (double)ir_type_numel(&lq) / ((double)lq.dim[lq.rank - 2] *
                                                     (double)lq.dim[lq.rank - 1]);
        double pairs = heads * (double)lq.dim[lq.rank - 2] * (double)lk.dim[lk.rank - 2];
        return pairs * (2 * (double)lq.dim[lq.rank - 1] + 3);
    }
    case IR_ATTN_DELTA: return 2 * in0;
    case IR_ATTN_STATS: case IR_ATTN_DQ: case IR_ATTN_DK: case IR_ATTN_DV: {
        double pairs, d, dv;
        attn_back_dims(op, &pairs, &d, &dv);
        bool two = op->code == IR_ATTN_STATS || op->code == IR_ATTN_DV;
        return pairs * (two ? 2 * (d + dv) + 5 : 4 * d + 2 * dv + 7);
    }
    case IR_SOFTMAX: case IR_RMSNORM: case IR_XENT: return 5 * in0;
    case IR_XENT_GRAD: return (op->nin == 3 ? 3 : 5) * in0;
    case IR_XENT_LSE: return 4 * in0;
    case IR_EMBEDDING_GRAD: return (double)ir_type_numel(&op->in[1]->type);
    case IR_ADAMW: return 12 * out;
    case IR_ADAM_M: case IR_ADAM_V: case IR_MOMENTUM: case IR_SGD: return 3 * out;
    case IR_GELU_GRAD: case IR_SILU_GRAD: return 8 * out;
    case IR_LAYERNORM: return 8 * in0;
    /* as the ops of autodiff's form it stands for (norm_grad.c): gx, two
     * means, gx xh, and dx's four; rmsnorm's without mean(gx) and its sub */
    case IR_LAYERNORM_DX: return 8 * in0;
    case IR_RMSNORM_DX: return 6 * in0;
    case IR_LAYERNORM_RSTD: return 4 * in0;
    case IR_RMSNORM_RSTD: return 2 * in0;
    case IR_MSE: return 3 * in0;
    case IR_SUM: case IR_MEAN: case IR_AMAX: return in0;
    default: break;
    }
    switch (ir_ops[op->code].cls) {
    case IR_C_BINARY: case IR_C_UNARY:
        return op->code == IR_CONSTRAIN ? 0 : out;
    default:
        return 0;
    }
}

double pass_comm_bytes(ir_opcode code, const ir_type *in, const ir_type *out, int64_t ranks)
{
    /* all_gather counts the gathered output; the others the input buffer */
    double elements = (double)ir_type_numel(code == IR_ALL_GATHER ? out : in);
    double f = ranks > 1 ? (double)(ranks - 1) / (double)ranks : 0;
    switch (code) {
    case IR_ALL_REDUCE: f *= 2; break;
    case IR_BROADCAST: f = ranks > 1 ? 1 : 0; break;
    case IR_ALL_GATHER: case IR_REDUCE_SCATTER: case IR_ALL_TO_ALL: break;
    default: return 0; /* slices and local ops send nothing */
    }
    return f * elements * ir_dtype_size(in->dtype);
}

bool pass_collective(const ir_module *m, const ir_op *op, pass_coll *c)
{
    if (ir_ops[op->code].cls == IR_C_P2P) { /* what is sent, counted once, by the sender */
        c->op = op;
        c->ranks = 2;
        const ir_type *t = op->code == IR_SEND ? &op->in[0]->type : &op->res[0]->type;
        c->elements = ir_type_numel(t);
        c->bytes = op->code == IR_SEND ? (double)c->elements * ir_dtype_size(t->dtype) : 0;
        return true;
    }
    if (ir_ops[op->code].cls != IR_C_COMM)
        return false;
    c->op = op;
    c->ranks = 1;
    for (int i = 0; i < op->a->naxes; i++)
        c->ranks *= m->mesh.size[op->a->axes[i]];
    const ir_type *in = &op->in[0]->type, *out = &op->res[0]->type;
    c->elements = ir_type_numel(op->code == IR_ALL_GATHER ? out : in);
    c->bytes = pass_comm_bytes(op->code, in, out, c->ranks);
    return true;
}

double pass_op_bytes(const ir_module *m, const ir_op *op)
{
    pass_coll c;
    return pass_collective(m, op, &c) ? c.bytes : 0;
}

bool pass_rank_in_stage(const ir_module *m, int64_t r, int s)
{
    if (m->stage < 0)
        return true;
    int64_t below = 1;
    for (int a = m->mesh.naxes - 1; a > m->pipe.axis; a--)
        below *= m->mesh.size[a];
    return (r / below) % m->mesh.size[m->pipe.axis] == s;
}

/* ---- kernel classes (passes.h: pass_kclass) ---- */

static const char *const kclass_names[PASS_KC_COUNT] = {
    [PASS_KC_ELEMENTWISE] = "elementwise",       [PASS_KC_TRANSPOSE] = "transpose",
    [PASS_KC_COLUMN] = "column",                 [PASS_KC_ROW] = "row",
    [PASS_KC_EMBEDDING] = "embedding",           [PASS_KC_EMBEDDING_GRAD] = "embedding_grad",
    [PASS_KC_CROSS_ENTROPY] = "cross_entropy",   [PASS_KC_OPTIMIZER] = "optimizer",
};

const char *pass_kclass_name(pass_kclass c)
{
    return c >= 0 && c < PASS_KC_COUNT ? kclass_names[c] : "?";
}

int pass_kclass_find(const char *name, size_t n)
{
    for (int c = 0; c < PASS_KC_COUNT; c++)
        if (strlen(kclass_names[c]) == n && !memcmp(kclass_names[c], name, n))
            return c;
    return -1;
}

static bool named(const char *op, const char *const *names)
{
    for (; *names; names++)
        if (!strcmp(op, *names))
            return true;
    return false;
}

pass_kclass pass_op_kclass(const char *op, bool last_dim)
{
    static const char *const optimizer[] = {"sgd", "momentum", "adam_m", "adam_v", "adamw", NULL};
    static const char *const xent[] = {"cross_entropy", "cross_entropy_grad", "cross_entropy_lse",
                                       NULL};
    static const char *const rows[] = {"layernorm", "rmsnorm", "layernorm_dx", "rmsnorm_dx",
                                       "layernorm_rstd", "rmsnorm_rstd", "attn_delta", NULL};
    static const char *const reductions[] = {"sum", "mean", "amax", "softmax", NULL};
    if (named(op, optimizer))
        return PASS_KC_OPTIMIZER;
    if (named(op, xent))
        return PASS_KC_CROSS_ENTROPY;
    if (!strcmp(op, "embedding_grad"))
        return PASS_KC_EMBEDDING_GRAD;
    if (!strcmp(op, "embedding"))
        return PASS_KC_EMBEDDING;
    if (named(op, rows))
        return PASS_KC_ROW;
    if (named(op, reductions))
        return last_dim ? PASS_KC_ROW : PASS_KC_COLUMN;
    return !strcmp(op, "transpose") ? PASS_KC_TRANSPOSE : PASS_KC_ELEMENTWISE;
}
