/* autodiff.c: reverse-mode differentiation and the optimizer (DESIGN.md
 * §3.2), pass_autodiff.
 *
 * Runs on the logical module, before sharding propagation. Walks the ops
 * that lead to the loss in reverse program order, and for each one whose
 * result has a gradient, emits the ops that give its operands their share
 * (phase backward). Only values that depend on a param get gradients. A
 * value used several times sums its shares. Each rule is written with the
 * language's own ops (and a few of autodiff's: gt, eq, gelu_grad,
 * silu_grad, expand, attn_probs, embedding_grad, cross_entropy_grad), so
 * propagation and partitioning treat gradients like every other value: a
 * contraction over a batch split over dp yields a gradient partial over dp,
 * which the partitioner resolves with an all_reduce.
 *
 * Then each param with a gradient gets its optimizer update (phase
 * optimizer): sgd, sgd with momentum, or adamw, as PyTorch defines them,
 * with the optimizer state as f32 `state` sources named "opt.NAME.m" and so
 * on, and the step count as the state "opt.step"; a bf16 or f16 param is
 * updated through an f32 master copy, the state "opt.NAME.master" made from
 * the param (init param("NAME")). Each new value is recorded as an update
 * of its param or state. A param the loss does not depend on has
 * no gradient and is left alone, as PyTorch's optimizers skip it. An
 * output of a param becomes an output of its new value.
 */
#include "passes.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ad {
    ir_module *m;
    ir_value **grad;     /* per value id of the forward graph: its gradient */
    bool *needs;         /* per value id: depends on a param */
    int nvalues;         /* value ids below this are the forward graph's */
    const ir_op *op;     /* the forward op whose rule is running */
    uint8_t phase;
    jmp_buf fail;        /* an op no rule covers */
    char err[512];
    su_loc at;           /* where the error is */
    ir_value *lr;        /* the step's learning rate under a schedule, else NULL */
    /* recompute blocks: the backward's copy of each forward value a
     * recompute region makes ([nvalues]), and for each copy (value id -
     * nvalues, [ncopies]) the forward value it stands for */
    ir_value **copy;
    ir_value **orig;
    int ncopies;
} ad;

/* ---- emitting ---- */

/* Appends code(in...) with the forward op's location and repetition. */
static ir_value *emit(ad *A, ir_opcode code, ir_value **in, int nin, const ir_attrs *attrs)
{
    ir_attrs a;
    memset(&a, 0, sizeof a);
    if (attrs)
        a = *attrs;
    char err[200];
    ir_value *r = ir_emit(A->m, code, in, nin, &a, err, sizeof err);
    if (!r) {
        snprintf(A->err, sizeof A->err, "the gradient of %s needs %s, which fails: %s",
                 A->op ? ir_ops[A->op->code].name : "the loss", ir_ops[code].name, err);
        if (A->op)
            A->at = A->op->loc;
        longjmp(A->fail, 1);
    }
    r->def->phase = A->phase;
    if (A->op) {
        r->def->loc = A->op->loc;
        r->def->rep = A->op->rep;
    }
    return r;
}

static ir_value *op1(ad *A, ir_opcode code, ir_value *x)
{
    return emit(A, code, &x, 1, NULL);
}

static ir_value *op2(ad *A, ir_opcode code, ir_value *x, ir_value *y)
{
    ir_value *in[2] = {x, y};
    return emit(A, code, in, 2, NULL);
}

/* A scalar constant of dtype t. */
static ir_value *cst(ad *A, double v, ir_dtype t)
{
    ir_attrs a = {.value = v};
    ir_type st = {.dtype = t};
    ir_op *op = ir_append(A->m, IR_CONST, NULL, 0, &a, &st);
    op->phase = A->phase;
    if (A->op) {
        op->loc = A->op->loc;
        op->rep = A->op->rep;
    }
    return op->res[0];
}

static ir_value *scale(ad *A, ir_value *x, double s)
{
    return op2(A, IR_MUL, x, cst(A, s, x->type.dtype));
}

static ir_value *reduce(ad *A, ir_opcode code, ir_value *x, int axis, bool keepdims)
{
    ir_attrs a = {.axis = axis, .keepdims = keepdims};
    return emit(A, code, &x, 1, &a);
}

static ir_value *reshape(ad *A, ir_value *x, const ir_type *t)
{
    if (ir_type_eq(&x->type, t))
        return x;
    ir_attrs a = {.nlist = t->rank};
    memcpy(a.list, t->dim, (size_t)t->rank * sizeof *t->dim);
    return emit(A, IR_RESHAPE, &x, 1, &a);
}

static ir_value *expand(ad *A, ir_value *x, const ir_type *t)
{
    if (ir_type_eq(&x->type, t))
        return x;
    ir_attrs a = {.nlist = t->rank};
    memcpy(a.list, t->dim, (size_t)t->rank * sizeof *t->dim);
    return emit(A, IR_EXPAND, &x, 1, &a);
}

/* x with its last two dims swapped. */
static ir_value *swap_last(ad *A, ir_value *x)
{
    int r = x->type.rank;
    ir_attrs a = {.nlist = r};
    for (int i = 0; i < r; i++)
        a.list[i] = i;
    a.list[r - 2] = r - 1;
    a.list[r - 1] = r - 2;
    return emit(A, IR_TRANSPOSE, &x, 1, &a);
}

/* The gradient g of a broadcast result, summed back to the shape of the
 * operand of type t (NumPy broadcasting, dims aligned at the end). */
static ir_value *unbroadcast(ad *A, ir_value *g, const ir_type *t)
{
    while (g->type.rank > t->rank)
        g = reduce(A, IR_SUM, g, 0, false);
    for (int d = 0; d < t->rank; d++)
        if (t->dim[d] == 1 && g->type.dim[d] != 1)
            g = reduce(A, IR_SUM, g, d, true);
    return g;
}

/* ---- accumulating ---- */

/* The forward value v stands for: itself, or what a recomputed copy
 * copies. */
static ir_value *forward_of(const ad *A, ir_value *v)
{
    int k = v->id - A->nvalues;
    return k >= 0 && k < A->ncopies && A->orig[k] ? A->orig[k] : v;
}

static void add_grad(ad *A, ir_value *v, ir_value *g)
{
    v = forward_of(A, v);
    if (!A->needs[v->id])
        return;
    if (!ir_type_eq(&g->type, &v->type)) /* a rule's bug, or a dtype autodiff lacks */
        g = reshape(A, unbroadcast(A, g, &v->type), &v->type);
    A->grad[v->id] = A->grad[v->id] ? op2(A, IR_ADD, A->grad[v->id], g) : g;
}

static bool needs(const ad *A, ir_value *v) { return A->needs[forward_of(A, v)->id]; }

/* ---- recompute blocks (LANGUAGE.md §12) ----
 *
 * An op made in a call of a `recompute block` carries the call's number
 * (ir_op.recompute). Its gradient rule reads the backward's copies of the
 * forward values the region made: the first rule that needs one emits
 * the copy of its op, and of the ops it reads in the region, recursively,
 * in the backward phase; values from outside the region (the block's
 * arguments, params) are read as they are. So the region's intermediate
 * values die in the forward, and the backward runs its forward again
 * before its gradients, as activation checkpointing does. */
static ir_value *recomputed(ad *A, ir_value *v, int region)
{
    const ir_op *d = v->def;
    if (v->id >= A->nvalues || d->recompute != region || ir_ops[d->code].cls == IR_C_SOURCE)
        return v; /* from outside the region (another call's result too): kept */
    if (A->copy[v->id])
        return A->copy[v->id];
    ir_value *in[8];
    ir_type t[4];
    for (int i = 0; i < d->nin; i++)
        in[i] = recomputed(A, d->in[i], region);
    for (int r = 0; r < d->nres; r++)
        t[r] = d->res[r]->type;
    ir_op *c = ir_append(A->m, d->code, in, d->nin, d->a, t);
    c->loc = d->loc;
    c->rep = d->rep;
    c->phase = IR_PH_BACKWARD;
    for (int r = 0; r < d->nres; r++) {
        int k = c->res[r]->id - A->nvalues;
        if (k >= A->ncopies) {
            int n = 2 * k + 64;
            ir_value **o = realloc(A->orig, (size_t)n * sizeof *o);
            if (!o)
                su_oom(A->m->oom);
            memset(o + A->ncopies, 0, (size_t)(n - A->ncopies) * sizeof *o);
            A->orig = o;
            A->ncopies = n;
        }
        A->orig[k] = d->res[r];
        A->copy[d->res[r]->id] = c->res[r];
        c->res[r]->name = d->res[r]->name;
    }
    return A->copy[v->id];
}

/* Whether op's rule reads its result's values (not only its type). */
static bool rule_reads_result(const ir_op *op)
{
    switch (op->code) {
    case IR_DIV: case IR_POW: case IR_AMAX: case IR_TANH: case IR_SIGMOID: case IR_EXP:
    case IR_SQRT: case IR_RSQRT: case IR_SOFTMAX:
        return true;
    default:
        return false;
    }
}

/* ---- the rules ---- */

/* a [..., M, K] @ b [..., K, N] with 1-D operands promoted: the rank-2
 * forms are made by reshapes, the gradients reshaped back. */
static void grad_matmul(ad *A, const ir_op *op, ir_value *gy)
{
    ir_value *a = op->in[0], *b = op->in[1];
    ir_type ta = a->type, tb = b->type, ty = gy->type;
    if (ta.rank == 1 && tb.rank == 1) {
        add_grad(A, a, op2(A, IR_MUL, b, gy));
        add_grad(A, b, op2(A, IR_MUL, a, gy));
        return;
    }
    if (ta.rank == 1) { /* [K] -> [1, K]; y [..., N] -> [..., 1, N] */
        ta.rank = 2, ta.dim[1] = ta.dim[0], ta.dim[0] = 1;
        ty.dim[ty.rank] = ty.dim[ty.rank - 1], ty.dim[ty.rank - 1] = 1, ty.rank++;
    }
    if (tb.rank == 1) { /* [K] -> [K, 1]; y [..., M] -> [..., M, 1] */
        tb.rank = 2, tb.dim[1] = 1;
        ty.dim[ty.rank++] = 1;
    }
    ir_value *a2 = reshape(A, a, &ta), *b2 = reshape(A, b, &tb), *g2 = reshape(A, gy, &ty);
    if (needs(A, a)) {
        ir_value *ga = unbroadcast(A, op2(A, IR_MATMUL, g2, swap_last(A, b2)), &ta);
        add_grad(A, a, reshape(A, ga, &a->type));
    }
    if (needs(A, b)) {
        ir_value *gb = unbroadcast(A, op2(A, IR_MATMUL, swap_last(A, a2), g2), &tb);
        add_grad(A, b, reshape(A, gb, &b->type));
    }
}

/* y = softmax(s) along axis: ds = y * (dy - sum(dy * y)). */
static ir_value *softmax_back(ad *A, ir_value *y, ir_value *gy, int axis)
{
    ir_value *dot = reduce(A, IR_SUM, op2(A, IR_MUL, gy, y), axis, true);
    return op2(A, IR_MUL, y, op2(A, IR_SUB, gy, dot));
}

/* attention(q, k, v) = p @ v with p = attn_probs(q, k), recomputed. */
static void grad_attention(ad *A, const ir_op *op, ir_value *gy)
{
    ir_value *q = op->in[0], *k = op->in[1], *v = op->in[2];
    ir_attrs ca = {.causal = op->a->causal};
    ir_value *qk[2] = {q, k};
    ir_value *p = emit(A, IR_ATTN_PROBS, qk, 2, &ca);
    int r = q->type.rank;
    add_grad(A, v, op2(A, IR_MATMUL, swap_last(A, p), gy));
    if (!needs(A, q) && !needs(A, k))
        return;
    ir_value *gp = op2(A, IR_MATMUL, gy, swap_last(A, v));
    ir_value *gs = softmax_back(A, p, gp, r - 1);
    double s = 1.0 / sqrt((double)q->type.dim[r - 1]);
    if (needs(A, q))
        add_grad(A, q, scale(A, op2(A, IR_MATMUL, gs, k), s));
    if (needs(A, k))
        add_grad(A, k, scale(A, op2(A, IR_MATMUL, swap_last(A, gs), q), s));
}

/* The reduced result (and its gradient) with the axis kept, size 1. */
static ir_value *keep_axis(ad *A, const ir_op *op, ir_value *y)
{
    if (op->a->keepdims)
        return y;
    ir_type t = op->in[0]->type;
    t.dim[op->a->axis] = 1;
    return reshape(A, y, &t);
}

static void grad_reduce(ad *A, const ir_op *op, ir_value *gy)
{
    ir_value *x = op->in[0];
    int ax = (int)op->a->axis;
    ir_value *gk = keep_axis(A, op, gy);
    switch (op->code) {
    case IR_SUM: add_grad(A, x, expand(A, gk, &x->type)); return;
    case IR_MEAN:
        add_grad(A, x, expand(A, scale(A, gk, 1.0 / (double)x->type.dim[ax]), &x->type));
        return;
    default: { /* amax: shared evenly among the maxima, as PyTorch does */
        ir_value *mask = op2(A, IR_EQ, x, keep_axis(A, op, op->res[0]));
        ir_value *count = reduce(A, IR_SUM, mask, ax, true);
        add_grad(A, x, op2(A, IR_MUL, mask, op2(A, IR_DIV, gk, count)));
        return;
    }
    }
}

/* layernorm(x, g, b) over the last dim, from the recomputed statistics. */
static void grad_layernorm(ad *A, const ir_op *op, ir_value *gy)
{
    ir_value *x = op->in[0], *g = op->in[1], *b = op->in[2];
    int last = x->type.rank - 1;
    ir_dtype t = x->type.dtype;
    ir_value *xc = op2(A, IR_SUB, x, reduce(A, IR_MEAN, x, last, true));
    ir_value *var = reduce(A, IR_MEAN, op2(A, IR_MUL, xc, xc), last, true);
    ir_value *rstd = op1(A, IR_RSQRT, op2(A, IR_ADD, var, cst(A, op->a->eps, t)));
    ir_value *xhat = op2(A, IR_MUL, xc, rstd);
    add_grad(A, b, unbroadcast(A, gy, &b->type));
    if (needs(A, g))
        add_grad(A, g, unbroadcast(A, op2(A, IR_MUL, gy, xhat), &g->type));
    if (!needs(A, x))
        return;
    ir_value *gx = op2(A, IR_MUL, gy, g);
    ir_value *m1 = reduce(A, IR_MEAN, gx, last, true);
    ir_value *m2 = reduce(A, IR_MEAN, op2(A, IR_MUL, gx, xhat), last, true);
    ir_value *inner = op2(A, IR_SUB, op2(A, IR_SUB, gx, m1), op2(A, IR_MUL, xhat, m2));
    add_grad(A, x, op2(A, IR_MUL, rstd, inner));
}

/* rmsnorm(x, g) = x * rsqrt(mean(x^2) + eps) * g. */
static void grad_rmsnorm(ad *A, const ir_op *op, ir_value *gy)
{
    ir_value *x = op->in[0], *g = op->in[1];
    int last = x->type.rank - 1;
    ir_value *ms = reduce(A, IR_MEAN, op2(A, IR_MUL, x, x), last, true);
    ir_value *r = op1(A, IR_RSQRT, op2(A, IR_ADD, ms, cst(A, op->a->eps, x->type.dtype)));
    ir_value *xhat = op2(A, IR_MUL, x, r);
    if (needs(A, g))
        add_grad(A, g, unbroadcast(A, op2(A, IR_MUL, gy, xhat), &g->type));
    if (!needs(A, x))
        return;
    ir_value *gx = op2(A, IR_MUL, gy, g);
    ir_value *m = reduce(A, IR_MEAN, op2(A, IR_MUL, gx, xhat), last, true);
    add_grad(A, x, op2(A, IR_MUL, r, op2(A, IR_SUB, gx, op2(A, IR_MUL, xhat, m))));
}

/* max and min: the larger (smaller) operand takes the gradient, ties
 * share it evenly (PyTorch's maximum and minimum). */
static void grad_minmax(ad *A, const ir_op *op, ir_value *gy)
{
    ir_value *a = op->in[0], *b = op->in[1];
    ir_value *half = scale(A, op2(A, IR_EQ, a, b), 0.5);
    ir_value *wa = op->code == IR_MAX ? op2(A, IR_GT, a, b) : op2(A, IR_GT, b, a);
    ir_value *wb = op->code == IR_MAX ? op2(A, IR_GT, b, a) : op2(A, IR_GT, a, b);
    if (needs(A, a))
        add_grad(A, a, unbroadcast(A, op2(A, IR_MUL, gy, op2(A, IR_ADD, wa, half)), &a->type));
    if (needs(A, b))
        add_grad(A, b, unbroadcast(A, op2(A, IR_MUL, gy, op2(A, IR_ADD, wb, half)), &b->type));
}

/* where(c, a, b): the gradient goes to a where c is true and to b where it
 * is false, summed over the dims each broadcast; c, bool, gets none. */
static void grad_where(ad *A, const ir_op *op, ir_value *gy)
{
    ir_value *c = op->in[0];
    for (int i = 1; i <= 2; i++) {
        ir_value *x = op->in[i];
        if (!needs(A, x))
            continue;
        ir_value *zero = cst(A, 0, gy->type.dtype);
        ir_value *in[3] = {c, i == 1 ? gy : zero, i == 1 ? zero : gy};
        add_grad(A, x, unbroadcast(A, emit(A, IR_WHERE, in, 3, NULL), &x->type));
    }
}

static void grad_binary(ad *A, const ir_op *op, ir_value *gy)
{
    ir_value *a = op->in[0], *b = op->in[1], *y = op->res[0];
    ir_value *ga = NULL, *gb = NULL;
    switch (op->code) {
    case IR_WHERE: grad_where(A, op, gy); return;
    case IR_ADD: ga = gy, gb = gy; break;
    case IR_SUB: ga = gy, gb = needs(A, b) ? op1(A, IR_NEG, gy) : NULL; break;
    case IR_MUL:
        ga = needs(A, a) ? op2(A, IR_MUL, gy, b) : NULL;
        gb = needs(A, b) ? op2(A, IR_MUL, gy, a) : NULL;
        break;
    case IR_DIV: /* d/db (a / b) = -(a / b) / b */
        ga = needs(A, a) ? op2(A, IR_DIV, gy, b) : NULL;
        gb = needs(A, b) ? op1(A, IR_NEG, op2(A, IR_DIV, op2(A, IR_MUL, gy, y), b)) : NULL;
        break;
    case IR_POW: /* d/da = b a^(b-1); d/db = a^b log a */
        if (needs(A, a)) {
            ir_value *bm1 = op2(A, IR_SUB, b, cst(A, 1.0, b->type.dtype));
            ga = op2(A, IR_MUL, gy, op2(A, IR_MUL, b, op2(A, IR_POW, a, bm1)));
        }
        gb = needs(A, b) ? op2(A, IR_MUL, gy, op2(A, IR_MUL, y, op1(A, IR_LOG, a))) : NULL;
        break;
    case IR_MAX:
    case IR_MIN: grad_minmax(A, op, gy); return;
    default: return; /* gt, eq and the comparisons: flat almost everywhere */
    }
    if (ga && needs(A, a))
        add_grad(A, a, unbroadcast(A, ga, &a->type));
    if (gb && needs(A, b))
        add_grad(A, b, unbroadcast(A, gb, &b->type));
}

static void grad_unary(ad *A, const ir_op *op, ir_value *gy)
{
    ir_value *x = op->in[0], *y = op->res[0], *g;
    ir_dtype t = y->type.dtype;
    switch (op->code) {
    case IR_NEG: g = op1(A, IR_NEG, gy); break;
    case IR_ABS: /* sign(x), 0 at 0 */
        g = op2(A, IR_MUL, gy, op2(A, IR_SUB, op2(A, IR_GT, x, cst(A, 0, t)),
                                   op2(A, IR_GT, cst(A, 0, t), x)));
        break;
    case IR_RELU: g = op2(A, IR_MUL, gy, op2(A, IR_GT, x, cst(A, 0, t))); break;
    case IR_GELU: g = op2(A, IR_GELU_GRAD, x, gy); break;
    case IR_SILU: g = op2(A, IR_SILU_GRAD, x, gy); break;
    case IR_TANH: /* 1 - y^2 */
        g = op2(A, IR_MUL, gy, op2(A, IR_SUB, cst(A, 1, t), op2(A, IR_MUL, y, y)));
        break;
    case IR_SIGMOID: /* y (1 - y) */
        g = op2(A, IR_MUL, op2(A, IR_MUL, gy, y), op2(A, IR_SUB, cst(A, 1, t), y));
        break;
    case IR_EXP: g = op2(A, IR_MUL, gy, y); break;
    case IR_LOG: g = op2(A, IR_DIV, gy, x); break;
    case IR_SQRT: g = op2(A, IR_DIV, scale(A, gy, 0.5), y); break;
    case IR_RSQRT: /* -y^3 / 2 */
        g = op2(A, IR_MUL, scale(A, gy, -0.5), op2(A, IR_MUL, y, op2(A, IR_MUL, y, y)));
        break;
    case IR_SIN: g = op2(A, IR_MUL, gy, op1(A, IR_COS, x)); break;
    case IR_COS: g = op2(A, IR_MUL, op1(A, IR_NEG, gy), op1(A, IR_SIN, x)); break;
    case IR_DROPOUT: { /* the same bits: the key, the tag and the global shape */
        ir_value *in[2] = {gy, op->in[1]};
        g = emit(A, IR_DROPOUT, in, 2, op->a);
        break;
    }
    case IR_CAST: {
        if (!ir_dtype_is_float(x->type.dtype))
            return;
        ir_attrs a = {.dtype = x->type.dtype};
        g = emit(A, IR_CAST, &gy, 1, &a);
        break;
    }
    default: su_unreachable();
    }
    add_grad(A, x, g);
}

/* Layout ops and the gathers: each moves the gradient back. */
static void grad_layout(ad *A, const ir_op *op, ir_value *gy)
{
    ir_value *x = op->in[0];
    switch (op->code) {
    case IR_CONSTRAIN: add_grad(A, x, gy); return;
    case IR_STOP_GRADIENT: return;
    case IR_RESHAPE: add_grad(A, x, reshape(A, gy, &x->type)); return;
    case IR_TRANSPOSE: {
        ir_attrs a = {.nlist = op->a->nlist};
        for (int i = 0; i < op->a->nlist; i++)
            a.list[op->a->list[i]] = i;
        add_grad(A, x, emit(A, IR_TRANSPOSE, &gy, 1, &a));
        return;
    }
    case IR_EMBEDDING: {
        ir_attrs a = {.nlist = 2, .list = {x->type.dim[0], x->type.dim[1]}};
        ir_value *in[2] = {op->in[1], gy};
        add_grad(A, x, emit(A, IR_EMBEDDING_GRAD, in, 2, &a));
        return;
    }
    case IR_EXPAND: add_grad(A, x, reshape(A, unbroadcast(A, gy, &x->type), &x->type)); return;
    case IR_NARROW: { /* the slice between zeros along dim */
        ir_value *in[3];
        int n = 0;
        int64_t d = op->a->dim, lo = op->a->offset, hi = op->a->bound;
        ir_type z = x->type;
        if (lo > 0) {
            z.dim[d] = lo;
            in[n++] = expand(A, cst(A, 0, z.dtype), &z);
        }
        in[n++] = gy;
        if (hi < x->type.dim[d]) {
            z.dim[d] = x->type.dim[d] - hi;
            in[n++] = expand(A, cst(A, 0, z.dtype), &z);
        }
        ir_attrs a = {.dim = d};
        add_grad(A, x, n == 1 ? gy : emit(A, IR_CONCAT, in, n, &a));
        return;
    }
    case IR_CONCAT: /* each operand's rows of the gradient */
        for (int i = 0, at = 0; i < op->nin; at += (int)op->in[i]->type.dim[op->a->dim], i++) {
            ir_value *xi = op->in[i];
            if (!needs(A, xi))
                continue;
            ir_attrs a = {.dim = op->a->dim, .offset = at, .bound = at + xi->type.dim[op->a->dim]};
            add_grad(A, xi, emit(A, IR_NARROW, &gy, 1, &a));
        }
        return;
    default: break;
    }
    snprintf(A->err, sizeof A->err, "cannot differentiate %s", ir_ops[op->code].name);
    A->at = op->loc;
    longjmp(A->fail, 1);
}

/* mse: 2 (pred - target) / n; cross_entropy: (softmax - one_hot) / rows. */
static void grad_loss(ad *A, const ir_op *op, ir_value *gy)
{
    ir_value *a = op->in[0], *b = op->in[1];
    if (op->code == IR_MSE) {
        double n = (double)ir_type_numel(&a->type);
        ir_value *g = op2(A, IR_MUL, op2(A, IR_SUB, a, b), scale(A, gy, 2.0 / n));
        add_grad(A, a, g);
        if (needs(A, b))
            add_grad(A, b, op1(A, IR_NEG, g));
        return;
    }
    double rows = (double)ir_type_numel(&b->type);
    ir_value *g = op2(A, IR_XENT_GRAD, a, b);
    add_grad(A, a, op2(A, IR_MUL, g, scale(A, gy, 1.0 / rows)));
}

static void grad_op(ad *A, const ir_op *op, ir_value *gy)
{
    switch (ir_ops[op->code].cls) {
    case IR_C_SOURCE: return;
    case IR_C_BINARY: grad_binary(A, op, gy); return;
    case IR_C_UNARY: grad_unary(A, op, gy); return;
    case IR_C_REDUCE: grad_reduce(A, op, gy); return;
    case IR_C_LOSS: grad_loss(A, op, gy); return;
    case IR_C_LAYOUT: grad_layout(A, op, gy); return;
    case IR_C_NORM:
        if (op->code == IR_SOFTMAX)
            add_grad(A, op->in[0], softmax_back(A, op->res[0], gy, (int)op->a->axis));
        else if (op->code == IR_LAYERNORM)
            grad_layernorm(A, op, gy);
        else
            grad_rmsnorm(A, op, gy);
        return;
    case IR_C_CONTRACT:
        if (op->code == IR_MATMUL) {
            grad_matmul(A, op, gy);
            return;
        }
        if (op->code == IR_ATTENTION) {
            grad_attention(A, op, gy);
            return;
        }
        break;
    default: break;
    }
    snprintf(A->err, sizeof A->err, "cannot differentiate %s", ir_ops[op->code].name);
    A->at = op->loc;
    longjmp(A->fail, 1);
}

/* ---- the optimizer ---- */

static ir_value *state(ad *A, const char *name, const ir_type *t, const ir_init *init,
                       const char *from)
{
    ir_attrs a = {.name = name, .init = *init, .init_param = from};
    ir_op *op = ir_append(A->m, IR_STATE, NULL, 0, &a, t);
    op->phase = IR_PH_OPTIMIZER;
    return op->res[0];
}

/* A zeroed f32 state of p's shape, "opt.NAME.SUFFIX". */
static ir_value *state32(ad *A, const char *name, const char *suffix, const ir_value *p)
{
    ir_type t = p->type;
    t.dtype = IR_F32;
    ir_init zeros = {.kind = IR_INIT_ZEROS};
    return state(A, su_sprintf(&A->m->arena, "opt.%s.%s", name, suffix), &t, &zeros, NULL);
}

static ir_value *cast(ad *A, ir_value *x, ir_dtype t)
{
    ir_attrs a = {.dtype = t};
    return emit(A, IR_CAST, &x, 1, &a);
}

/* The new value of the f32 weights w (param NAME or its master) by the
 * f32 gradient g: sgd, sgd with momentum, or adamw, as PyTorch defines
 * them, each state's update recorded. *step is adamw's step count, made at
 * its first use. */
/* The state "opt.step": the frontend's, which dropout's key reads, or
 * made here. */
static ir_value *step_state(ad *A)
{
    for (int i = 0; i < A->m->ops.n; i++) {
        const ir_op *op = IR_OP(A->m, i);
        if (op->code == IR_STATE && !strcmp(op->a->name, "opt.step"))
            return op->res[0];
    }
    ir_type st = {.dtype = IR_F32};
    ir_init zeros = {.kind = IR_INIT_ZEROS};
    return state(A, "opt.step", &st, &zeros, NULL);
}

/* The step count t (1 at the first step): the state "opt.step" plus one,
 * made at its first use. */
static ir_value *step_count(ad *A, ir_value **step)
{
    if (!*step) {
        ir_value *s = step_state(A);
        *step = op2(A, IR_ADD, s, cst(A, 1.0, IR_F32));
        ir_add_update(A->m, s, *step, NULL);
    }
    return *step;
}

/* The learning rate of step t under the schedule (LANGUAGE.md §12):
 * lr t / W up to the warmup W, then the decay to M at N over f = (t - W) /
 * (N - W), clamped to [0, 1] so that it is lr through the warmup and M
 * from N on; the warmup's ramp is below lr where the decay is not, so the
 * smaller of the two is the rate of every step. */
static ir_value *scheduled_lr(ad *A, ir_value *t)
{
    const ir_train *tr = &A->m->train;
    ir_value *lr = cst(A, tr->lr, IR_F32), *rate = lr;
    if (tr->decay != IR_DECAY_NONE) {
        ir_value *f = op2(A, IR_MUL, op2(A, IR_SUB, t, cst(A, tr->warmup, IR_F32)),
                          cst(A, 1.0 / (tr->steps - tr->warmup), IR_F32));
        f = op2(A, IR_MIN, op2(A, IR_MAX, f, cst(A, 0, IR_F32)), cst(A, 1, IR_F32));
        ir_value *m = cst(A, tr->min_lr, IR_F32);
        if (tr->decay == IR_DECAY_COSINE) { /* M + (lr - M) (1 + cos(pi f)) / 2 */
            ir_value *c = op1(A, IR_COS, op2(A, IR_MUL, f, cst(A, M_PI, IR_F32)));
            rate = op2(A, IR_ADD, m, op2(A, IR_MUL, cst(A, (tr->lr - tr->min_lr) / 2, IR_F32),
                                         op2(A, IR_ADD, c, cst(A, 1, IR_F32))));
        } else { /* lr + (M - lr) f */
            rate = op2(A, IR_ADD, lr, op2(A, IR_MUL, f, cst(A, tr->min_lr - tr->lr, IR_F32)));
        }
    }
    if (tr->warmup > 0)
        rate = op2(A, IR_MIN, rate, op2(A, IR_MUL, t, cst(A, tr->lr / tr->warmup, IR_F32)));
    return rate;
}

static ir_value *update_rule(ad *A, ir_value *w, const char *name, ir_value *g, ir_value **step)
{
    const ir_train *t = &A->m->train;
    ir_module *m = A->m;
    ir_attrs h = {.lr = t->lr, .momentum = t->momentum, .beta1 = t->beta1,
                  .beta2 = t->beta2, .eps = t->eps, .wd = t->wd};
    /* Under a schedule the update ops run with lr 1 and no decay, on
     * operands that carry the step's rate: sgd steps by lr_t (g + wd w),
     * or lr_t times the momentum buffer; adamw's weights decay by lr_t wd
     * first and its first moment comes scaled by lr_t (a copy: the state
     * keeps the moment itself), as torch.optim does with its group's lr. */
    ir_value *lr = A->lr;
    ir_attrs hs = h;
    if (lr)
        hs.lr = 1, hs.wd = 0;
    if (t->opt == IR_OPT_SGD && t->momentum == 0) {
        ir_value *d = g;
        if (lr && t->wd)
            d = op2(A, IR_ADD, g, op2(A, IR_MUL, w, cst(A, t->wd, IR_F32)));
        ir_value *in[2] = {w, lr ? op2(A, IR_MUL, d, lr) : d};
        return emit(A, IR_SGD, in, 2, &hs);
    }
    if (t->opt == IR_OPT_SGD) {
        ir_value *buf = state32(A, name, "momentum", w);
        ir_value *in[3] = {buf, g, w};
        ir_value *nbuf = emit(A, IR_MOMENTUM, in, 3, &h);
        ir_attrs h0 = hs;
        h0.wd = 0; /* applied in the momentum buffer, as PyTorch does */
        ir_value *in2[2] = {w, lr ? op2(A, IR_MUL, nbuf, lr) : nbuf};
        ir_add_update(m, buf, nbuf, NULL);
        return emit(A, IR_SGD, in2, 2, &h0);
    }
    step_count(A, step);
    ir_value *mv = state32(A, name, "m", w), *vv = state32(A, name, "v", w);
    ir_value *in_m[2] = {mv, g}, *in_v[2] = {vv, g};
    ir_value *nm = emit(A, IR_ADAM_M, in_m, 2, &h), *nv = emit(A, IR_ADAM_V, in_v, 2, &h);
    ir_value *wd = w;
    if (lr && t->wd) /* w (1 - lr_t wd) */
        wd = op2(A, IR_MUL, w, op2(A, IR_SUB, cst(A, 1, IR_F32),
                                   op2(A, IR_MUL, lr, cst(A, t->wd, IR_F32))));
    ir_value *in[4] = {wd, lr ? op2(A, IR_MUL, nm, lr) : nm, nv, *step};
    ir_add_update(m, mv, nm, NULL);
    ir_add_update(m, vv, nv, NULL);
    return emit(A, IR_ADAMW, in, 4, &hs);
}

/* The update of param p (named name) by gradient g. Optimizer states are
 * f32 whatever p's dtype. A bf16 or f16 param is trained through an f32
 * master copy, as mixed-precision training does (Micikevicius et al.,
 * 2018): the state "opt.NAME.master", made from the param itself; the
 * gradient is cast to f32 once, the update runs on the master, and the
 * param takes the new master rounded to its dtype. */
static void optimize(ad *A, ir_value *p, const char *name, ir_value *g, ir_value **step)
{
    ir_module *m = A->m;
    if (p->type.dtype == IR_F32) {
        ir_add_update(m, p, update_rule(A, p, name, g, step), g);
        return;
    }
    ir_type t = p->type;
    t.dtype = IR_F32;
    ir_init from_p = {.kind = IR_INIT_PARAM};
    ir_value *w = state(A, su_sprintf(&m->arena, "opt.%s.master", name), &t, &from_p, name);
    ir_value *nw = update_rule(A, w, name, cast(A, g, IR_F32), step);
    ir_add_update(m, w, nw, NULL);
    ir_add_update(m, p, cast(A, nw, p->type.dtype), g);
}

/* ---- the pass ---- */

/* Which values depend on a param, in program order. */
static void mark_needs(ad *A)
{
    for (int i = 0; i < A->m->ops.n; i++) {
        const ir_op *op = IR_OP(A->m, i);
        bool any = op->code == IR_PARAM;
        for (int j = 0; j < op->nin && op->code != IR_STOP_GRADIENT; j++)
            any |= A->needs[op->in[j]->id];
        for (int r = 0; r < op->nres; r++)
            A->needs[op->res[r]->id] = any && ir_dtype_is_float(op->res[r]->type.dtype);
    }
}

/* An output that names a param hands back its value after the step
 * (LANGUAGE.md §12): its update, where it has one. */
static void after_step(ir_module *m)
{
    for (int i = 0; i < m->outputs.n; i++) {
        ir_output *o = IR_OUTPUT(m, i);
        for (int k = 0; k < m->updates.n; k++)
            if (IR_UPDATE(m, k)->src == o->v && o->v->def->code == IR_PARAM) {
                o->v = IR_UPDATE(m, k)->v;
                break;
            }
    }
}

/* Every stop_gradient replaced by its operand, once autodiff has read
 * them: no later pass sees one. */
static void drop_stops(ir_module *m)
{
    ir_value **rep = NULL;
    int n = 0;
    for (int i = 0; i < m->ops.n; i++) {
        ir_op *op = IR_OP(m, i);
        for (int j = 0; j < op->nin && rep; j++)
            if (rep[op->in[j]->id])
                op->in[j] = rep[op->in[j]->id];
        if (op->code != IR_STOP_GRADIENT) {
            m->ops.v[n++] = op;
            continue;
        }
        if (!rep) {
            rep = su_alloc(&m->arena, (size_t)(m->next_id + 1) * sizeof *rep);
            memset(rep, 0, (size_t)(m->next_id + 1) * sizeof *rep);
        }
        rep[op->res[0]->id] = op->in[0];
    }
    m->ops.n = n;
    if (!rep)
        return;
    for (int i = 0; i < m->outputs.n; i++)
        if (rep[IR_OUTPUT(m, i)->v->id])
            IR_OUTPUT(m, i)->v = rep[IR_OUTPUT(m, i)->v->id];
    if (m->train.loss && rep[m->train.loss->id])
        m->train.loss = rep[m->train.loss->id];
}

/* clip = C (torch.nn.utils.clip_grad_norm_): n, the L2 norm of every
 * param's gradient taken together (each gradient whole, as unsharded: the
 * partitioner all-reduces the partial sums of squares of split ones), and
 * every gradient times min(C / (n + 1e-6), 1) before the update. Squares
 * summed in f32 whatever the gradients' dtype. */
/* The squares are summed a repetition at a time, in the repetitions'
 * order, and those of the params outside any repetition last: a pipeline
 * keeps a repetition's params on one stage, so each stage adds its own
 * and the running sum crosses to the next stage once, rather than one
 * square per param (pipesplit.c's run_post sends a per-step value where
 * another stage's op reads it). */
static void clip_grads(ad *A, int nops)
{
    ir_module *m = A->m;
    ir_value *total = NULL;
    int hi = -1;
    for (int i = 0; i < nops; i++)
        hi = IR_OP(m, i)->rep > hi ? IR_OP(m, i)->rep : hi;
    for (int rep = 0; rep <= hi + 1; rep++) { /* hi + 1: outside any repetition */
        ir_value *part = NULL;
        for (int i = 0; i < nops; i++) {
            const ir_op *op = IR_OP(m, i);
            ir_value *g = op->code == IR_PARAM ? A->grad[op->res[0]->id] : NULL;
            if (!g || (op->rep < 0 ? hi + 1 : op->rep) != rep)
                continue;
            ir_value *x = g->type.dtype == IR_F32 ? g : cast(A, g, IR_F32);
            ir_value *sq = op2(A, IR_MUL, x, x);
            while (sq->type.rank > 0)
                sq = reduce(A, IR_SUM, sq, 0, false);
            part = part ? op2(A, IR_ADD, part, sq) : sq;
        }
        if (part)
            total = total ? op2(A, IR_ADD, total, part) : part;
    }
    if (!total)
        return;
    ir_value *norm = op1(A, IR_SQRT, total);
    ir_value *f = op2(A, IR_DIV, cst(A, m->train.clip, IR_F32),
                      op2(A, IR_ADD, norm, cst(A, 1e-6, IR_F32)));
    f = op2(A, IR_MIN, f, cst(A, 1.0, IR_F32));
    for (int i = 0; i < nops; i++) {
        const ir_op *op = IR_OP(m, i);
        ir_value **g = op->code == IR_PARAM ? &A->grad[op->res[0]->id] : NULL;
        if (!g || !*g)
            continue;
        ir_value *fg = (*g)->type.dtype == IR_F32 ? f : cast(A, f, (*g)->type.dtype);
        *g = op2(A, IR_MUL, *g, fg);
    }
}

static bool run(ad *A, pass_grads *grads)
{
    ir_module *m = A->m;
    int nops = m->ops.n;
    mark_needs(A);
    A->phase = IR_PH_BACKWARD;
    ir_value *loss = m->train.loss;
    if (!A->needs[loss->id]) { /* models: the frontend says so first */
        snprintf(A->err, sizeof A->err, "the loss does not depend on any param");
        A->at = loss->def->loc;
        return false;
    }
    A->grad[loss->id] = cst(A, 1.0, loss->type.dtype);
    for (int i = nops - 1; i >= 0; i--) {
        A->op = IR_OP(m, i);
        ir_value *gy = A->op->nres == 1 ? A->grad[A->op->res[0]->id] : NULL;
        if (gy && A->op->recompute) { /* the rule reads the recomputed values */
            ir_op c = *A->op;
            ir_value *in[8], *res = A->op->res[0];
            for (int k = 0; k < c.nin; k++)
                in[k] = recomputed(A, A->op->in[k], A->op->recompute);
            if (rule_reads_result(A->op))
                res = recomputed(A, res, A->op->recompute);
            c.in = in;
            c.res = &res;
            grad_op(A, &c, gy);
        } else if (gy)
            grad_op(A, A->op, gy);
    }
    A->op = NULL;
    A->phase = IR_PH_OPTIMIZER;
    int np = 0;
    for (int i = 0; i < nops; i++)
        np += IR_OP(m, i)->code == IR_PARAM;
    if (grads) {
        grads->n = 0;
        grads->param = su_alloc(&m->arena, (size_t)(np + 1) * sizeof *grads->param);
        grads->grad = su_alloc(&m->arena, (size_t)(np + 1) * sizeof *grads->grad);
    }
    if (m->train.clip > 0)
        clip_grads(A, nops);
    ir_value *step = NULL;
    if (m->train.warmup > 0 || m->train.decay != IR_DECAY_NONE)
        A->lr = scheduled_lr(A, step_count(A, &step));
    for (int i = 0; i < nops; i++) {
        const ir_op *op = IR_OP(m, i);
        ir_value *g = op->code == IR_PARAM ? A->grad[op->res[0]->id] : NULL;
        if (!g)
            continue;
        if (grads) {
            grads->param[grads->n] = op->res[0];
            grads->grad[grads->n++] = g;
        }
        optimize(A, op->res[0], op->a->name, g, &step);
    }
    for (int i = 0; i < nops && !step; i++) /* dropout's key counts the steps */
        if (IR_OP(m, i)->code == IR_DROPOUT)
            step_count(A, &step);
    after_step(m);
    return true;
}

bool pass_autodiff(ir_module *m, pass_grads *grads, su_buf *err, su_loc *at)
{
    if (at)
        *at = (su_loc){0, 0};
    if (grads)
        memset(grads, 0, sizeof *grads);
    if (!m->train.loss || m->updates.n) {
        if (!m->partitioned)
            drop_stops(m);
        return true;
    }
    if (m->partitioned) {
        su_buf_puts(err, "autodiff runs on the logical module, before partitioning");
        return false;
    }
    ad A;
    memset(&A, 0, sizeof A);
    A.m = m;
    A.nvalues = m->next_id;
    A.grad = su_alloc(&m->arena, (size_t)(m->next_id + 1) * sizeof *A.grad);
    A.needs = su_alloc(&m->arena, (size_t)(m->next_id + 1) * sizeof *A.needs);
    A.copy = su_alloc(&m->arena, (size_t)(m->next_id + 1) * sizeof *A.copy);
    /* values made by the rules have ids past nvalues: they never need a
     * gradient of their own, and add_grad only reads forward ids (a
     * recomputed copy's, forward_of) */
    if (setjmp(A.fail) || !run(&A, grads)) {
        free(A.orig);
        su_buf_puts(err, A.err);
        if (at)
            *at = A.at;
        return false;
    }
    free(A.orig);
    drop_stops(m);
    return true;
}
