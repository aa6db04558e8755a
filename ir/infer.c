/* infer.c: the shape and dtype rule of every op (LANGUAGE.md §7), one case
 * per op of ops.def. ir_infer is the one place that decides what an op makes
 * from its operands: the frontend shows its messages to the user as they are,
 * and the verifier reruns it to check the result types a pass stored. */
#include "ir.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* Longest type text: "bf16[" + 8 dims of ", " and 20 digits + "]" < 200. */
#define TYPE_LEN 256

typedef struct ctx {
    const ir_mesh *mesh;
    ir_opcode code;
    int nin;            /* the operands given */
    char op[24];        /* the op as the user writes it: "'+'", "sum" */
    char *err;          /* the message, errlen bytes */
    size_t errlen;
} ctx;

static bool fail(ctx *c, const char *fmt, ...) SU_PRINTF(2, 3);

/* Writes the message and returns false, so a check reads `return fail(...)`. */
static bool fail(ctx *c, const char *fmt, ...)
{
    if (c->err && c->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err, c->errlen, fmt, ap);
        va_end(ap);
    }
    return false;
}

/* "[64, 1024]" into buf (size bytes). */
static const char *lstr(char *buf, size_t size, const int64_t *l, int n)
{
    size_t k = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < n && k < size; i++)
        k += (size_t)snprintf(buf + k, size - k, "%s%lld", i ? ", " : "", (long long)l[i]);
    if (k < size)
        snprintf(buf + k, size - k, "]");
    return buf;
}

/* "f32[64, 1024]", as ir_type_print writes it. */
static const char *tstr(char buf[TYPE_LEN], const ir_type *t)
{
    size_t k = (size_t)snprintf(buf, TYPE_LEN, "%s", ir_dtype_name(t->dtype));
    lstr(buf + k, TYPE_LEN - k, t->dim, t->rank);
    return buf;
}

/* Checks a type is one the IR can hold: known dtype, rank 0..IR_MAX_RANK,
 * dims >= 1, an element count that fits in int64. which names it: operand
 * which + 1 of the op, or its result for -1 (the name is only made for a
 * message: the verifier checks every op of every module this way, and
 * formatting it each time was half of a compile's time). */
static bool check_type(ctx *c, const ir_type *t, int which)
{
    char b[TYPE_LEN], what[64];
    bool ok = (int)t->dtype >= 0 && (int)t->dtype < IR_NDTYPES && t->rank >= 0 &&
              t->rank <= IR_MAX_RANK;
    int64_t n = 1;
    for (int i = 0; ok && i < t->rank; i++)
        ok = t->dim[i] >= 1 && su_mul64(n, t->dim[i], &n);
    if (ok)
        return true;
    if (which >= 0)
        snprintf(what, sizeof what, "operand %d of %s", which + 1, c->op);
    else
        snprintf(what, sizeof what, "the result of %s", c->op);
    if ((int)t->dtype < 0 || (int)t->dtype >= IR_NDTYPES)
        return fail(c, "%s has an unknown dtype (%d)", what, (int)t->dtype);
    if (t->rank < 0 || t->rank > IR_MAX_RANK)
        return fail(c, "%s has rank %d; at most %d dimensions are supported", what, t->rank,
                    IR_MAX_RANK);
    n = 1;
    for (int i = 0; i < t->rank; i++) {
        if (t->dim[i] < 1)
            return fail(c, "%s has a dimension of size %lld: %s", what, (long long)t->dim[i],
                        tstr(b, t));
        if (!su_mul64(n, t->dim[i], &n))
            return fail(c, "%s has too many elements: %s", what, tstr(b, t));
    }
    return true;
}

/* The operand count against the op table, then each operand's type: the
 * rules below may then index dims and multiply them freely. */
static bool check_operands(ctx *c, const ir_type *const *in, int nin)
{
    const ir_opinfo *info = &ir_ops[c->code];
    if (nin < info->min_in || nin > info->max_in) {
        if (info->min_in == info->max_in)
            return fail(c, "%s takes %d operand%s, got %d", c->op, info->min_in,
                        info->min_in == 1 ? "" : "s", nin);
        return fail(c, "%s takes %d to %d operands, got %d", c->op, info->min_in, info->max_in,
                    nin);
    }
    for (int i = 0; i < nin; i++) {
        if (!in[i])
            return fail(c, "operand %d of %s is missing", i + 1, c->op);
        if (!check_type(c, in[i], i))
            return false;
    }
    return true;
}

static bool same_dtype(ctx *c, const ir_type *const *in, int nin)
{
    for (int i = 1; i < nin; i++)
        if (in[i]->dtype != in[0]->dtype)
            return fail(c, "mixed dtypes in %s: %s and %s (use cast to convert one)", c->op,
                        ir_dtype_name(in[0]->dtype), ir_dtype_name(in[i]->dtype));
    return true;
}

static bool need_float(ctx *c, const ir_type *t)
{
    char b[TYPE_LEN];
    if (ir_dtype_is_float(t->dtype))
        return true;
    return fail(c, "%s needs %s, got %s", c->op,
                ir_ops[c->code].max_in > 1 ? "floating-point operands" : "a floating-point operand",
                tstr(b, t));
}

/* NumPy broadcasting of two shapes aligned at their ends: each pair of dims
 * is equal or one of them is 1. */
static bool bcast(const int64_t *x, int nx, const int64_t *y, int ny, int64_t *out, int *nout)
{
    int n = nx > ny ? nx : ny;
    for (int i = 0; i < n; i++) {
        int64_t dx = i < n - nx ? 1 : x[i - (n - nx)];
        int64_t dy = i < n - ny ? 1 : y[i - (n - ny)];
        if (dx != dy && dx != 1 && dy != 1)
            return false;
        out[i] = dx == 1 ? dy : dx;
    }
    *nout = n;
    return true;
}

static bool infer_binary(ctx *c, const ir_type *const *in, ir_type *out)
{
    char t1[TYPE_LEN], t2[TYPE_LEN];
    if (!same_dtype(c, in, 2) || (c->code == IR_POW && !need_float(c, in[0])))
        return false;
    out->dtype = in[0]->dtype;
    if (!bcast(in[0]->dim, in[0]->rank, in[1]->dim, in[1]->rank, out->dim, &out->rank))
        return fail(c, "operands of %s do not broadcast: %s and %s", c->op, tstr(t1, in[0]),
                    tstr(t2, in[1]));
    return true;
}

/* a < b and the other comparisons: operands of one dtype (bool only for
 * == and !=), broadcasting, a bool result. */
static bool infer_compare(ctx *c, const ir_type *const *in, ir_type *out)
{
    if (!infer_binary(c, in, out))
        return false;
    out->dtype = IR_BOOL;
    return true;
}

/* where(c, a, b): c bool, a and b of one dtype (the result's); all three
 * broadcast. */
static bool infer_where(ctx *c, const ir_type *const *in, ir_type *out)
{
    char t1[TYPE_LEN], t2[TYPE_LEN], t3[TYPE_LEN];
    if (in[0]->dtype != IR_BOOL)
        return fail(c, "where needs a bool condition, got %s (compare it, e.g. x > 0, or cast "
                    "it to bool)", tstr(t1, in[0]));
    if (!same_dtype(c, in + 1, 2))
        return false;
    ir_type ab;
    if (!bcast(in[1]->dim, in[1]->rank, in[2]->dim, in[2]->rank, ab.dim, &ab.rank) ||
        !bcast(in[0]->dim, in[0]->rank, ab.dim, ab.rank, out->dim, &out->rank))
        return fail(c, "operands of where do not broadcast: %s, %s and %s", tstr(t1, in[0]),
                    tstr(t2, in[1]), tstr(t3, in[2]));
    out->dtype = in[1]->dtype;
    return true;
}

/* dropout(x, key[, pos...]): x float; key an i32 scalar; the shape the
 * global one, of x's rank and at least its dims; a pos per split dim. */
static bool infer_dropout(ctx *c, const ir_type *const *in, const ir_attrs *a, ir_type *out)
{
    char t1[TYPE_LEN];
    if (!need_float(c, in[0]))
        return false;
    if (in[1]->dtype != IR_I32 || in[1]->rank != 0)
        return fail(c, "dropout's key must be an i32 scalar, got %s", tstr(t1, in[1]));
    if (!(a->value >= 0 && a->value < 1))
        return fail(c, "dropout's probability must be in [0, 1), got %g", a->value);
    if (a->nlist != in[0]->rank)
        return fail(c, "dropout's global shape has %d dims, its operand %d", a->nlist,
                    in[0]->rank);
    for (int d = 0; d < a->nlist; d++)
        if (a->list[d] < in[0]->dim[d] || a->list[d] % in[0]->dim[d])
            return fail(c, "dropout's global dim %d (%lld) is not a multiple of its operand's "
                        "(%lld)", d, (long long)a->list[d], (long long)in[0]->dim[d]);
    for (int i = 2; i < c->nin; i++)
        if (in[i]->dtype != IR_I32 || in[i]->rank != 1)
            return fail(c, "dropout's positions must be i32 vectors, got %s", tstr(t1, in[i]));
    *out = *in[0];
    return true;
}

/* Whether op may read a bool operand: comparisons for equality, where,
 * cast, and the ops that move elements without computing on them. */
static bool takes_bool(ir_opcode code)
{
    switch (code) {
    case IR_EQUAL: case IR_NOT_EQUAL: case IR_WHERE: case IR_CAST: case IR_CONSTRAIN:
    case IR_STOP_GRADIENT: case IR_TRANSPOSE: case IR_RESHAPE: case IR_EXPAND: case IR_NARROW:
    case IR_CONCAT: case IR_SLICE: case IR_ALL_GATHER: case IR_ALL_TO_ALL: case IR_BROADCAST:
    case IR_SEND: case IR_RECV: case IR_EMBEDDING:
        return true;
    default:
        return false;
    }
}

/* NumPy matmul: [..., M, K] @ [..., K, N] -> [..., M, N]; a 1-D operand
 * loses its M or N. The leading (batch) dims broadcast. */
static bool infer_matmul(ctx *c, const ir_type *const *in, const ir_attrs *at, ir_type *out)
{
    const ir_type *a = in[0], *b = in[1];
    char t1[TYPE_LEN], t2[TYPE_LEN];
    ir_type ta, tb; /* the operands as read: trans swaps the last two dims */
    if (at && at->trans) {
        const ir_type *io[2] = {a, b};
        ir_type *to[2] = {&ta, &tb};
        for (int i = 0; i < 2; i++) {
            *to[i] = *io[i];
            if (!(at->trans >> i & 1))
                continue;
            if (io[i]->rank < 2)
                return fail(c, "%s reads operand %d transposed, which needs rank 2 or more, "
                            "got %s", c->op, i + 1, tstr(t1, io[i]));
            int r = io[i]->rank;
            to[i]->dim[r - 2] = io[i]->dim[r - 1];
            to[i]->dim[r - 1] = io[i]->dim[r - 2];
        }
        if (at->trans > (IR_TRANS_A | IR_TRANS_B))
            return fail(c, "%s's trans %d is not a, b or ab", c->op, at->trans);
        a = &ta, b = &tb;
    }
    if (a->rank == 0 || b->rank == 0)
        return fail(c, "%s needs operands of rank 1 or more, got %s @ %s", c->op, tstr(t1, a),
                    tstr(t2, b));
    if (!same_dtype(c, in, 2))
        return false;
    int64_t ka = a->dim[a->rank - 1], kb = b->dim[b->rank == 1 ? 0 : b->rank - 2];
    if (ka != kb)
        return fail(c, "%s contracts dimension of size %lld with one of size %lld: %s @ %s",
                    c->op, (long long)ka, (long long)kb, tstr(t1, a), tstr(t2, b));
    if (at && at->parts && (a->dtype != IR_BF16 || ka % 3))
        return fail(c, "%s of parts reads bf16 parts, 3 of them along the contracted "
                    "dimension, got %s @ %s", c->op, tstr(t1, a), tstr(t2, b));
    int na = a->rank >= 2 ? a->rank - 2 : 0, nb = b->rank >= 2 ? b->rank - 2 : 0;
    if (!bcast(a->dim, na, b->dim, nb, out->dim, &out->rank))
        return fail(c, "batch dimensions of %s do not broadcast: %s @ %s", c->op, tstr(t1, a),
                    tstr(t2, b));
    out->dtype = at && at->parts ? IR_F32 : a->dtype;
    if (a->rank >= 2)
        out->dim[out->rank++] = a->dim[a->rank - 2];
    if (b->rank >= 2)
        out->dim[out->rank++] = b->dim[b->rank - 1];
    return true;
}

/* split3(x) {dim}: f32 x, its dim 3 times as long in bf16. */
static bool infer_split3(ctx *c, const ir_type *x, ir_attrs *a, ir_type *out)
{
    char t[TYPE_LEN];
    if (x->dtype != IR_F32)
        return fail(c, "%s splits f32 into bf16 parts, got %s", c->op, tstr(t, x));
    if (a->dim < 0 || a->dim >= x->rank)
        return fail(c, "%s's dim %lld is not a dimension of %s", c->op, (long long)a->dim,
                    tstr(t, x));
    *out = *x;
    out->dtype = IR_BF16;
    out->dim[a->dim] *= 3;
    return true;
}

/* The causal positions of attention or attn_probs (ops.def), when given as
 * operand i: i32[S] for q [..., S, d], and only with causal. */
static bool check_pos(ctx *c, const ir_type *const *in, int i, const ir_attrs *a)
{
    if (c->nin <= i)
        return true;
    const ir_type *q = in[0], *pos = in[i];
    char tq[TYPE_LEN], tp[TYPE_LEN];
    if (!a->causal)
        return fail(c, "%s takes query positions only when causal", c->op);
    if (pos->dtype != IR_I32 || pos->rank != 1 || pos->dim[0] != q->dim[q->rank - 2])
        return fail(c, "%s needs query positions i32[S] for q %s, got %s", c->op, tstr(tq, q),
                    tstr(tp, pos));
    return true;
}

/* Whether the leading dims of k (or v) are q's (rank r each): equal, but
 * for the heads (dim -3) of a rank of 3 or more, where k may have G heads
 * that divide q's H (grouped-query attention: query head h reads key head
 * h / (H / G), ops.def). */
static bool kv_lead(const ir_type *q, const ir_type *k, int r)
{
    for (int i = 0; i < r - 2; i++)
        if (k->dim[i] != q->dim[i] &&
            !(i == r - 3 && k->dim[i] > 0 && q->dim[i] % k->dim[i] == 0))
            return false;
    return true;
}

/* q [..., S, d], k [..., T, d], v [..., T, dv] -> [..., S, dv]. The leading
 * dims must agree exactly (kernels index heads without broadcasting), but
 * that k and v may have fewer heads than q, a divisor (kv_lead). S may
 * differ from T even when causal (the mask is aligned to the end). */
static bool infer_attention(ctx *c, const ir_type *const *in, const ir_attrs *a, ir_type *out)
{
    static const char *const names[] = {"q", "k", "v"};
    const ir_type *q = in[0], *k = in[1], *v = in[2];
    char tq[TYPE_LEN], tk[TYPE_LEN], tv[TYPE_LEN];
    for (int i = 0; i < 3; i++)
        if (in[i]->rank < 2)
            return fail(c, "attention needs %s of rank 2 or more, got %s", names[i],
                        tstr(tq, in[i]));
    if (!same_dtype(c, in, 3) || !need_float(c, q))
        return false;
    int r = q->rank;
    bool lead = k->rank == r && v->rank == r && kv_lead(q, k, r);
    for (int i = 0; lead && i < r - 2; i++)
        lead = v->dim[i] == k->dim[i];
    if (!lead)
        return fail(c, "attention needs q, k and v with the same leading dimensions, "
                    "got %s, %s and %s",
                    tstr(tq, q), tstr(tk, k), tstr(tv, v));
    if (q->dim[r - 1] != k->dim[r - 1])
        return fail(c, "attention needs q and k with the same last dimension, got %s and %s",
                    tstr(tq, q), tstr(tk, k));
    if (k->dim[r - 2] != v->dim[r - 2])
        return fail(c, "attention needs k and v with the same sequence length, got %s and %s",
                    tstr(tk, k), tstr(tv, v));
    if (!check_pos(c, in, 3, a))
        return false;
    *out = *q;
    out->dim[r - 1] = v->dim[r - 1];
    return true;
}

/* A negative axis counts from the end; stored normalised so passes and the
 * printer never see a negative one. */
static bool norm_axis(ctx *c, const ir_type *t, int64_t *axis)
{
    char b[TYPE_LEN];
    int64_t ax = *axis < 0 ? *axis + t->rank : *axis;
    if (ax < 0 || ax >= t->rank)
        return fail(c, "axis %lld is out of range for %s of %s", (long long)*axis, c->op,
                    tstr(b, t));
    *axis = ax;
    return true;
}

static bool infer_reduce(ctx *c, const ir_type *x, ir_attrs *a, ir_type *out)
{
    if ((c->code == IR_MEAN && !need_float(c, x)) || !norm_axis(c, x, &a->axis))
        return false;
    *out = *x;
    if (a->keepdims) {
        out->dim[a->axis] = 1;
        return true;
    }
    for (int i = (int)a->axis; i + 1 < x->rank; i++)
        out->dim[i] = x->dim[i + 1];
    out->rank--;
    return true;
}

/* layernorm(x, g, b) and rmsnorm(x, g) over the last dim of x. */
static bool infer_norm(ctx *c, const ir_type *const *in, int nin, double eps, ir_type *out)
{
    static const char *const names[] = {"x", "g", "b"};
    const ir_type *x = in[0];
    char tx[TYPE_LEN], tp[TYPE_LEN]; /* made for a message only */
    if (x->rank < 1)
        return fail(c, "%s needs x of rank 1 or more, got %s", c->op, tstr(tx, x));
    if (!same_dtype(c, in, nin) || !need_float(c, x))
        return false;
    int64_t d = x->dim[x->rank - 1];
    for (int i = 1; i < nin; i++)
        if (in[i]->rank != 1 || in[i]->dim[0] != d)
            return fail(c, "%s needs %s of shape [%lld] to match the last dimension of %s, got %s",
                        c->op, names[i], (long long)d, tstr(tx, x), tstr(tp, in[i]));
    if (!(eps > 0))
        return fail(c, "%s needs eps > 0, got %g", c->op, eps);
    *out = *x;
    return true;
}

/* layernorm_dx (dy, x, mean, rstd, g) and rmsnorm_dx (dy, x, r, g) -> dy's
 * type (ops.def): dy and x alike, each statistic [..., 1], g [n]. */
static bool infer_norm_dx(ctx *c, const ir_type *const *in, int nin, ir_type *out)
{
    const ir_type *dy = in[0], *x = in[1], *g = in[nin - 1];
    char t1[TYPE_LEN], t2[TYPE_LEN];
    if (!same_dtype(c, in, nin) || !need_float(c, dy))
        return false;
    if (dy->rank < 1 || !ir_type_eq(dy, x))
        return fail(c, "%s needs dy and x of one type, got %s and %s", c->op, tstr(t1, dy),
                    tstr(t2, x));
    int r = dy->rank;
    for (int i = 2; i < nin - 1; i++) {
        bool ok = in[i]->rank == r && in[i]->dim[r - 1] == 1;
        for (int d = 0; ok && d < r - 1; d++)
            ok = in[i]->dim[d] == dy->dim[d];
        if (!ok)
            return fail(c, "%s needs its statistics of shape [..., 1] for x %s, got %s", c->op,
                        tstr(t1, x), tstr(t2, in[i]));
    }
    if (g->rank != 1 || g->dim[0] != dy->dim[r - 1])
        return fail(c, "%s needs g of shape [%lld], got %s", c->op, (long long)dy->dim[r - 1],
                    tstr(t1, g));
    *out = *dy;
    return true;
}

/* layernorm_rstd (x) and rmsnorm_rstd (x) {eps} -> x's type with the last
 * dim 1 (ops.def). */
static bool infer_norm_rstd(ctx *c, const ir_type *x, double eps, ir_type *out)
{
    char tx[TYPE_LEN];
    if (x->rank < 1)
        return fail(c, "%s needs x of rank 1 or more, got %s", c->op, tstr(tx, x));
    if (!need_float(c, x))
        return false;
    if (!(eps > 0))
        return fail(c, "%s needs eps > 0, got %g", c->op, eps);
    *out = *x;
    out->dim[out->rank - 1] = 1;
    return true;
}

/* out.dim[i] = in.dim[list[i]]. */
static bool infer_transpose(ctx *c, const ir_type *x, const ir_attrs *a, ir_type *out)
{
    char tx[TYPE_LEN], tl[TYPE_LEN];
    if (a->nlist < 0 || a->nlist > IR_MAX_RANK)
        return fail(c, "transpose takes at most %d axes, got %d", IR_MAX_RANK, a->nlist);
    bool used[IR_MAX_RANK] = {false};
    bool perm = a->nlist == x->rank;
    for (int i = 0; perm && i < a->nlist; i++) {
        int64_t p = a->list[i];
        perm = p >= 0 && p < x->rank && !used[p];
        if (perm) {
            used[p] = true;
            out->dim[i] = x->dim[p];
        }
    }
    if (!perm)
        return fail(c, "transpose of %s needs a permutation of its %d axes, got %s",
                    tstr(tx, x), x->rank, lstr(tl, sizeof tl, a->list, a->nlist));
    out->dtype = x->dtype;
    out->rank = x->rank;
    return true;
}

/* The new shape may hold one -1, replaced in a->list by the size that keeps
 * the element count. */
static bool infer_reshape(ctx *c, const ir_type *x, ir_attrs *a, ir_type *out)
{
    char tx[TYPE_LEN], tl[TYPE_LEN]; /* made for a message only */
    if (a->nlist < 0 || a->nlist > IR_MAX_RANK)
        return fail(c, "reshape to %d dimensions is not supported (at most %d)", a->nlist,
                    IR_MAX_RANK);
    int64_t list[IR_MAX_RANK]; /* as written, before the -1 is filled */
    memcpy(list, a->list, (size_t)a->nlist * sizeof *list);
    int hole = -1;
    int64_t known = 1, n = ir_type_numel(x); /* the operand check bounded n */
    for (int i = 0; i < a->nlist; i++) {
        if (a->list[i] == -1 && hole >= 0)
            return fail(c, "reshape can infer only one dimension (-1), got %s",
                        lstr(tl, sizeof tl, list, a->nlist));
        if (a->list[i] == -1)
            hole = i;
        else if (a->list[i] < 1)
            return fail(c, "reshape needs dimensions of size 1 or more (or one -1), got %s",
                        lstr(tl, sizeof tl, list, a->nlist));
        else if (!su_mul64(known, a->list[i], &known))
            return fail(c, "reshape to %s has too many elements",
                        lstr(tl, sizeof tl, list, a->nlist));
    }
    if (hole >= 0 && n % known)
        return fail(c, "cannot reshape %s (%lld elements) to %s: %lld is not a multiple of %lld",
                    tstr(tx, x), (long long)n, lstr(tl, sizeof tl, list, a->nlist), (long long)n,
                    (long long)known);
    if (hole >= 0) {
        a->list[hole] = n / known;
        known = n;
    }
    if (known != n)
        return fail(c, "cannot reshape %s (%lld elements) to %s (%lld elements)", tstr(tx, x),
                    (long long)n, lstr(tl, sizeof tl, list, a->nlist), (long long)known);
    out->dtype = x->dtype;
    out->rank = a->nlist;
    memcpy(out->dim, a->list, (size_t)a->nlist * sizeof *a->list);
    return true;
}

/* table [V, D] and i32 ids [...] -> [..., D]. */
static bool infer_embedding(ctx *c, const ir_type *table, const ir_type *ids, ir_type *out)
{
    char b[TYPE_LEN];
    if (table->rank != 2 || !ir_dtype_is_float(table->dtype))
        return fail(c, "embedding table must be a 2-D floating-point tensor, got %s",
                    tstr(b, table));
    if (ids->dtype != IR_I32)
        return fail(c, "embedding ids must be i32, got %s", tstr(b, ids));
    if (ids->rank + 1 > IR_MAX_RANK)
        return fail(c, "embedding of ids %s would have rank %d; "
                    "at most %d dimensions are supported",
                    tstr(b, ids), ids->rank + 1, IR_MAX_RANK);
    out->dtype = table->dtype;
    out->rank = ids->rank + 1;
    memcpy(out->dim, ids->dim, (size_t)ids->rank * sizeof *ids->dim);
    out->dim[ids->rank] = table->dim[1];
    return true;
}

/* A mean of squares: float only, like mean. */
static bool infer_mse(ctx *c, const ir_type *const *in, ir_type *out)
{
    char t1[TYPE_LEN], t2[TYPE_LEN];
    if (!same_dtype(c, in, 2) || !need_float(c, in[0]))
        return false;
    if (!ir_type_eq(in[0], in[1]))
        return fail(c, "mse needs operands of the same shape, got %s and %s", tstr(t1, in[0]),
                    tstr(t2, in[1]));
    out->dtype = in[0]->dtype;
    out->rank = 0;
    return true;
}

/* logits [..., C] and i32 labels [...] -> a scalar. */
static bool infer_xent(ctx *c, const ir_type *logits, const ir_type *labels, ir_type *out)
{
    char t1[TYPE_LEN], t2[TYPE_LEN], t3[TYPE_LEN];
    tstr(t1, logits);
    tstr(t2, labels);
    if (logits->rank < 1 || !ir_dtype_is_float(logits->dtype))
        return fail(c, "cross_entropy needs floating-point logits of rank 1 or more, got %s", t1);
    if (labels->dtype != IR_I32)
        return fail(c, "cross_entropy labels must be i32, got %s", t2);
    bool match = labels->rank == logits->rank - 1;
    for (int i = 0; match && i < labels->rank; i++)
        match = labels->dim[i] == logits->dim[i];
    if (!match)
        return fail(c, "cross_entropy needs labels of shape %s for logits %s, got %s",
                    lstr(t3, sizeof t3, logits->dim, logits->rank - 1), t1, t2);
    out->dtype = logits->dtype;
    out->rank = 0;
    return true;
}

/* cross_entropy_lse (logits) -> f32 of the logits' shape with the last
 * dim 1 (ops.def). */
static bool infer_xent_lse(ctx *c, const ir_type *logits, ir_type *out)
{
    char t1[TYPE_LEN];
    if (logits->rank < 1 || !ir_dtype_is_float(logits->dtype))
        return fail(c, "%s needs floating-point logits of rank 1 or more, got %s", c->op,
                    tstr(t1, logits));
    *out = *logits;
    out->dtype = IR_F32;
    out->dim[out->rank - 1] = 1;
    return true;
}

/* cross_entropy_grad's third operand: the logits' cross_entropy_lse. */
static bool infer_xent_lse_operand(ctx *c, const ir_type *logits, const ir_type *lse)
{
    ir_type want;
    char t1[TYPE_LEN], t2[TYPE_LEN];
    if (!infer_xent_lse(c, logits, &want))
        return false;
    if (!ir_type_eq(lse, &want))
        return fail(c, "%s needs the rows' log-sum-exp as %s, got %s", c->op, tstr(t1, &want),
                    tstr(t2, lse));
    return true;
}

/* The number of ranks a collective spans: the product of its axes' sizes. */
static bool comm_ranks(ctx *c, const ir_attrs *a, int64_t *n)
{
    int nmesh = c->mesh ? c->mesh->naxes : 0;
    if (a->naxes < 1 || a->naxes > IR_MAX_AXES)
        return fail(c, "%s needs 1 to %d mesh axes, got %d", c->op, IR_MAX_AXES, a->naxes);
    unsigned seen = 0;
    *n = 1;
    for (int i = 0; i < a->naxes; i++) {
        int ax = a->axes[i];
        if (ax >= nmesh)
            return fail(c, "%s runs over mesh axis %d, but the mesh has %d ax%s", c->op, ax,
                        nmesh, nmesh == 1 ? "is" : "es");
        if (seen & (1u << ax))
            return fail(c, "%s names mesh axis %s twice", c->op, c->mesh->name[ax]);
        seen |= 1u << ax;
        if (!su_mul64(*n, c->mesh->size[ax], n))
            return fail(c, "%s spans too many ranks", c->op);
    }
    return true;
}

static bool comm_dim(ctx *c, const ir_type *x, int64_t dim)
{
    char b[TYPE_LEN];
    if (dim < 0 || dim >= x->rank)
        return fail(c, "dimension %lld is out of range for %s of %s", (long long)dim, c->op,
                    tstr(b, x));
    return true;
}

/* Local shapes, NCCL semantics: gather multiplies dim, scatter divides it,
 * all_to_all splits dim and concatenates along dim2. */
static bool infer_comm(ctx *c, const ir_type *x, const ir_attrs *a, ir_type *out)
{
    char b[TYPE_LEN];
    int64_t n;
    if (!comm_ranks(c, a, &n))
        return false;
    *out = *x;
    if (c->code == IR_ALL_REDUCE || c->code == IR_BROADCAST)
        return true;
    if (!comm_dim(c, x, a->dim) || (c->code == IR_ALL_TO_ALL && !comm_dim(c, x, a->dim2)))
        return false;
    if (c->code != IR_ALL_GATHER) {
        if (x->dim[a->dim] % n)
            return fail(c, "%s over %lld ranks cannot split dimension %lld of %s (size %lld)",
                        c->op, (long long)n, (long long)a->dim, tstr(b, x),
                        (long long)x->dim[a->dim]);
        out->dim[a->dim] /= n;
    }
    int64_t grow = c->code == IR_ALL_GATHER ? a->dim : c->code == IR_ALL_TO_ALL ? a->dim2 : -1;
    if (grow >= 0 && !su_mul64(out->dim[grow], n, &out->dim[grow]))
        return fail(c, "result of %s is too large: dimension %lld of %s times %lld ranks",
                    c->op, (long long)grow, tstr(b, x), (long long)n);
    return true;
}

/* expand: x broadcast (NumPy rules, aligned at the end) to a->list. */
static bool infer_expand(ctx *c, const ir_type *x, const ir_attrs *a, ir_type *out)
{
    char tx[TYPE_LEN], tl[TYPE_LEN];
    if (a->nlist < x->rank || a->nlist > IR_MAX_RANK)
        return fail(c, "expand of %s needs a shape of rank %d to %d, got %s", tstr(tx, x),
                    x->rank, IR_MAX_RANK, lstr(tl, sizeof tl, a->list, a->nlist));
    int off = a->nlist - x->rank;
    for (int i = 0; i < a->nlist; i++) {
        if (a->list[i] < 1)
            return fail(c, "expand needs dimensions of size 1 or more, got %s",
                        lstr(tl, sizeof tl, a->list, a->nlist));
        if (i >= off && x->dim[i - off] != 1 && x->dim[i - off] != a->list[i])
            return fail(c, "cannot expand %s to %s", tstr(tx, x),
                        lstr(tl, sizeof tl, a->list, a->nlist));
    }
    out->dtype = x->dtype;
    out->rank = a->nlist;
    memcpy(out->dim, a->list, (size_t)a->nlist * sizeof *a->list);
    return true;
}

/* The columns of bucket b ([R, M]) that a value of n elements takes at
 * offset: n / R of them, inside the bucket. */
static bool bucket_cols(ctx *c, const ir_type *b, int64_t n, int64_t offset, const char *what)
{
    char tb[TYPE_LEN];
    if (b->rank != 2)
        return fail(c, "%s needs a bucket of rank 2 ([rows, columns]), got %s", c->op,
                    tstr(tb, b));
    if (n % b->dim[0])
        return fail(c, "%s of %lld elements does not split into the %lld rows of bucket %s",
                    what, (long long)n, (long long)b->dim[0], tstr(tb, b));
    if (offset < 0 || offset > b->dim[1] || n / b->dim[0] > b->dim[1] - offset)
        return fail(c, "%s (%lld columns at offset %lld) does not fit bucket %s", what,
                    (long long)(n / b->dim[0]), (long long)offset, tstr(tb, b));
    return true;
}

/* insert(bucket, x) {offset} -> the bucket's type. */
static bool infer_insert(ctx *c, const ir_type *b, const ir_type *x, const ir_attrs *a,
                         ir_type *out)
{
    if (!bucket_cols(c, b, ir_type_numel(x), a->offset, "the value"))
        return false;
    *out = *b;
    return true;
}

/* extract(bucket) {offset, shape} -> shape. */
static bool infer_extract(ctx *c, const ir_type *b, const ir_attrs *a, ir_type *out)
{
    char tl[TYPE_LEN];
    if (a->nlist < 0 || a->nlist > IR_MAX_RANK)
        return fail(c, "extract to %d dimensions is not supported (at most %d)", a->nlist,
                    IR_MAX_RANK);
    int64_t n = 1;
    for (int i = 0; i < a->nlist; i++)
        if (a->list[i] < 1 || !su_mul64(n, a->list[i], &n))
            return fail(c, "extract needs a shape of sizes 1 or more, got %s",
                        lstr(tl, sizeof tl, a->list, a->nlist));
    if (!bucket_cols(c, b, n, a->offset, "the result"))
        return false;
    out->dtype = b->dtype;
    out->rank = a->nlist;
    memcpy(out->dim, a->list, (size_t)a->nlist * sizeof *a->list);
    return true;
}

/* attn_probs: q [..., S, d], k [..., T, d] -> [..., S, T]; attn_lse's k
 * may have fewer heads (kv_lead). */
static bool infer_attn_probs(ctx *c, const ir_type *const *in, const ir_attrs *a, ir_type *out)
{
    const ir_type *q = in[0], *k = in[1];
    char tq[TYPE_LEN], tk[TYPE_LEN];
    tstr(tq, q);
    tstr(tk, k);
    if (q->rank < 2 || !same_dtype(c, in, 2) || !need_float(c, q))
        return q->rank < 2 ? fail(c, "%s needs q of rank 2 or more, got %s", c->op, tq) : false;
    int r = q->rank;
    bool ok = k->rank == r && k->dim[r - 1] == q->dim[r - 1];
    for (int i = 0; ok && i < r - 2; i++)
        ok = k->dim[i] == q->dim[i];
    if (!ok && c->code == IR_ATTN_LSE)
        ok = k->rank == r && k->dim[r - 1] == q->dim[r - 1] && kv_lead(q, k, r);
    if (!ok)
        return fail(c, "%s needs q and k with the same leading and last dimensions, got %s "
                    "and %s", c->op, tq, tk);
    if (!check_pos(c, in, 2, a))
        return false;
    *out = *q;
    out->dim[r - 1] = k->dim[r - 2];
    return true;
}

/* attn_lse (q, k[, pos]) -> f32[..., S]: attn_probs' rule, its last
 * dimension dropped. */
static bool infer_attn_lse(ctx *c, const ir_type *const *in, const ir_attrs *a, ir_type *out)
{
    if (!infer_attn_probs(c, in, a, out))
        return false;
    out->dtype = IR_F32;
    out->rank--;
    return true;
}

/* attn_delta (y, dy, lse) -> f32[..., S, 2]: y and dy [..., S, dv] of one
 * float type, lse f32[..., S]. */
static bool infer_attn_delta(ctx *c, const ir_type *const *in, ir_type *out)
{
    const ir_type *y = in[0], *dy = in[1], *lse = in[2];
    char t1[TYPE_LEN], t2[TYPE_LEN];
    if (y->rank < 2)
        return fail(c, "%s needs y of rank 2 or more, got %s", c->op, tstr(t1, y));
    if (!need_float(c, y))
        return false;
    if (!ir_type_eq(y, dy))
        return fail(c, "%s needs y and dy of one type, got %s and %s", c->op, tstr(t1, y),
                    tstr(t2, dy));
    int r = y->rank;
    bool ok = lse->dtype == IR_F32 && lse->rank == r - 1;
    for (int i = 0; ok && i < r - 1; i++)
        ok = lse->dim[i] == y->dim[i];
    if (!ok)
        return fail(c, "%s needs lse f32[..., S] for y %s, got %s", c->op, tstr(t1, y),
                    tstr(t2, lse));
    *out = *y;
    out->dtype = IR_F32;
    out->dim[r - 1] = 2;
    return true;
}

/* attn_stats (q, k, v, dy[, pos]) -> f32[..., S, 2]; attn_dq and attn_dk
 * (q, k, v, dy, st[, pos]) -> q's and k's types; attn_dv (q, k, dy, st[,
 * pos]) -> [..., T, dv] (ops.def). q [..., S, d], k [..., T, d], v [...,
 * T, dv], dy [..., S, dv], the leading dims equal but that k and v may have
 * fewer heads than q (kv_lead); st f32[..., S, 2]. */
static bool infer_attn_grad(ctx *c, const ir_type *const *in, const ir_attrs *a, ir_type *out)
{
    bool has_v = c->code != IR_ATTN_DV, has_st = c->code != IR_ATTN_STATS;
    const ir_type *q = in[0], *k = in[1], *v = has_v ? in[2] : NULL, *dy = in[has_v ? 3 : 2];
    const ir_type *st = has_st ? in[has_v ? 4 : 3] : NULL;
    int nt = has_v ? 4 : 3; /* the float operands of q's dtype */
    char t1[TYPE_LEN], t2[TYPE_LEN];
    if (q->rank < 2)
        return fail(c, "%s needs q of rank 2 or more, got %s", c->op, tstr(t1, q));
    if (!same_dtype(c, in, nt) || !need_float(c, q))
        return false;
    int r = q->rank;
    bool ok = k->rank == r && dy->rank == r && (!v || v->rank == r) && kv_lead(q, k, r);
    for (int i = 0; ok && i < r - 2; i++)
        ok = dy->dim[i] == q->dim[i] && (!v || v->dim[i] == k->dim[i]);
    if (!ok)
        return fail(c, "%s needs q, k, v and dy with the same leading dimensions, got q %s "
                    "and k %s", c->op, tstr(t1, q), tstr(t2, k));
    if (k->dim[r - 1] != q->dim[r - 1])
        return fail(c, "%s needs q and k of the same width, got %s and %s", c->op,
                    tstr(t1, q), tstr(t2, k));
    if (dy->dim[r - 2] != q->dim[r - 2] || (v && (v->dim[r - 2] != k->dim[r - 2] ||
                                                  v->dim[r - 1] != dy->dim[r - 1])))
        return fail(c, "%s needs v [..., T, dv] for k [..., T, d] and dy [..., S, dv] for q "
                    "[..., S, d], got dy %s", c->op, tstr(t1, dy));
    if (st) {
        ok = st->dtype == IR_F32 && st->rank == r && st->dim[r - 1] == 2;
        for (int i = 0; ok && i < r - 1; i++)
            ok = st->dim[i] == q->dim[i];
        if (!ok)
            return fail(c, "%s needs the statistics f32[..., S, 2] for q %s, got %s", c->op,
                        tstr(t1, q), tstr(t2, st));
    }
    if (!check_pos(c, in, nt + has_st, a))
        return false;
    switch (c->code) {
    case IR_ATTN_STATS:
        *out = *q;
        out->dtype = IR_F32;
        out->dim[r - 1] = 2;
        return true;
    case IR_ATTN_DQ: *out = *q; return true;
    case IR_ATTN_DK: *out = *k; return true;
    default:
        *out = *k;
        out->dim[r - 1] = dy->dim[r - 1];
        return true;
    }
}

/* embedding_grad: i32 ids [...] and dy [..., D] -> [V, D] (a->list). */
static bool infer_embedding_grad(ctx *c, const ir_type *ids, const ir_type *dy,
                                 const ir_attrs *a, ir_type *out)
{
    char ti[TYPE_LEN], td[TYPE_LEN], tl[TYPE_LEN];
    tstr(ti, ids);
    tstr(td, dy);
    if (ids->dtype != IR_I32 || !need_float(c, dy))
        return ids->dtype != IR_I32 ? fail(c, "%s needs i32 ids, got %s", c->op, ti) : false;
    bool ok = dy->rank == ids->rank + 1;
    for (int i = 0; ok && i < ids->rank; i++)
        ok = dy->dim[i] == ids->dim[i];
    if (!ok)
        return fail(c, "%s needs dy of shape [ids..., D], got ids %s and dy %s", c->op, ti, td);
    if (a->nlist != 2 || a->list[0] < 1 || a->list[1] != dy->dim[dy->rank - 1])
        return fail(c, "%s needs a table shape [V, %lld], got %s", c->op,
                    (long long)dy->dim[dy->rank - 1], lstr(tl, sizeof tl, a->list, a->nlist));
    out->dtype = dy->dtype;
    out->rank = 2;
    out->dim[0] = a->list[0];
    out->dim[1] = a->list[1];
    return true;
}

/* Optimizer updates: every operand of the first one's type, except adamw's
 * step count t, a floating-point scalar. */
static bool infer_optim(ctx *c, const ir_type *const *in, int nin, ir_type *out)
{
    char t1[TYPE_LEN], t2[TYPE_LEN];
    if (!need_float(c, in[0]))
        return false;
    int n = c->code == IR_ADAMW ? 3 : nin;
    for (int i = 1; i < n; i++)
        if (!ir_type_eq(in[i], in[0]))
            return fail(c, "%s needs operands of one type, got %s and %s", c->op,
                        tstr(t1, in[0]), tstr(t2, in[i]));
    if (c->code == IR_ADAMW && (in[3]->rank != 0 || !ir_dtype_is_float(in[3]->dtype)))
        return fail(c, "%s needs a floating-point scalar step count, got %s", c->op,
                    tstr(t1, in[3]));
    *out = *in[0];
    return true;
}

/* narrow: elements offset .. bound - 1 of dim, 0 <= offset < bound <= size. */
static bool infer_narrow(ctx *c, const ir_type *x, const ir_attrs *a, ir_type *out)
{
    char b[TYPE_LEN];
    if (a->dim < 0 || a->dim >= x->rank)
        return fail(c, "slicing dimension %lld of %s, which has %d", (long long)a->dim,
                    tstr(b, x), x->rank);
    if (a->offset < 0 || a->bound <= a->offset || a->bound > x->dim[a->dim])
        return fail(c, "the slice %lld:%lld of dimension %lld of %s is empty or out of range",
                    (long long)a->offset, (long long)a->bound, (long long)a->dim, tstr(b, x));
    *out = *x;
    out->dim[a->dim] = a->bound - a->offset;
    return true;
}

/* concat along dim: one dtype and rank, every other dim equal. */
static bool infer_concat(ctx *c, const ir_type *const *in, const ir_attrs *a, ir_type *out)
{
    char b0[TYPE_LEN], b1[TYPE_LEN];
    if (!same_dtype(c, in, c->nin))
        return false;
    const ir_type *x = in[0];
    if (a->dim < 0 || a->dim >= x->rank)
        return fail(c, "concat along dimension %lld of %s, which has %d", (long long)a->dim,
                    tstr(b0, x), x->rank);
    *out = *x;
    for (int i = 1; i < c->nin; i++) {
        bool same = in[i]->rank == x->rank;
        for (int d = 0; same && d < x->rank; d++)
            same = d == a->dim || in[i]->dim[d] == x->dim[d];
        if (!same)
            return fail(c, "concat along dimension %lld needs every other dimension equal: "
                        "%s and %s", (long long)a->dim, tstr(b0, x), tstr(b1, in[i]));
        if (!su_add64(out->dim[a->dim], in[i]->dim[a->dim], &out->dim[a->dim]))
            return fail(c, "concat makes too many elements");
    }
    return true;
}

static bool infer_op(ctx *c, const ir_type *const *in, ir_attrs *a, ir_type *out)
{
    switch (c->code) {
    case IR_INPUT:
    case IR_PARAM:
    case IR_CONST:
    case IR_STATE:
        return fail(c, "sources have no inferred type");
    case IR_SEND:
    case IR_RECV:
        return fail(c, "send and recv have no inferred type");
    case IR_INSTANCES:
        return fail(c, "instances have no inferred type");
    case IR_GT:
    case IR_EQ:
        return infer_binary(c, in, out);
    case IR_GELU_GRAD:
    case IR_SILU_GRAD:
        return need_float(c, in[0]) && infer_binary(c, in, out);
    case IR_LESS:
    case IR_LESS_EQ:
    case IR_GREATER:
    case IR_GREATER_EQ:
    case IR_EQUAL:
    case IR_NOT_EQUAL:
        return infer_compare(c, in, out);
    case IR_WHERE:
        return infer_where(c, in, out);
    case IR_ATTN_PROBS:
        return infer_attn_probs(c, in, a, out);
    case IR_ATTN_STATS:
    case IR_ATTN_DQ:
    case IR_ATTN_DK:
    case IR_ATTN_DV:
        return infer_attn_grad(c, in, a, out);
    case IR_ATTN_LSE:
        return infer_attn_lse(c, in, a, out);
    case IR_ATTN_DELTA:
        return infer_attn_delta(c, in, out);
    case IR_EXPAND:
        return infer_expand(c, in[0], a, out);
    case IR_EMBEDDING_GRAD:
        return infer_embedding_grad(c, in[0], in[1], a, out);
    case IR_XENT_GRAD:
        if (!infer_xent(c, in[0], in[1], out))
            return false;
        if (c->nin == 3 && !infer_xent_lse_operand(c, in[0], in[2]))
            return false;
        *out = *in[0];
        return true;
    case IR_XENT_LSE:
        return infer_xent_lse(c, in[0], out);
    case IR_MOMENTUM:
    case IR_SGD:
    case IR_ADAM_M:
    case IR_ADAM_V:
    case IR_ADAMW:
        return infer_optim(c, in, ir_ops[c->code].max_in, out);
    case IR_ADD:
    case IR_SUB:
    case IR_MUL:
    case IR_DIV:
    case IR_MAX:
    case IR_MIN:
    case IR_POW:
        return infer_binary(c, in, out);
    case IR_NEG:
    case IR_ABS:
    case IR_CONSTRAIN:
    case IR_STOP_GRADIENT:
        *out = *in[0];
        return true;
    case IR_RELU:
    case IR_GELU:
    case IR_SILU:
    case IR_TANH:
    case IR_SIGMOID:
    case IR_EXP:
    case IR_LOG:
    case IR_SQRT:
    case IR_RSQRT:
    case IR_SIN:
    case IR_COS:
        *out = *in[0];
        return need_float(c, in[0]);
    case IR_DROPOUT:
        return infer_dropout(c, in, a, out);
    case IR_CAST:
        if ((int)a->dtype < 0 || (int)a->dtype >= IR_NDTYPES)
            return fail(c, "cast to an unknown dtype (%d)", (int)a->dtype);
        *out = *in[0];
        out->dtype = a->dtype;
        return true;
    case IR_MATMUL:
        return infer_matmul(c, in, a, out);
    case IR_SPLIT3:
        return infer_split3(c, in[0], a, out);
    case IR_ATTENTION:
        return infer_attention(c, in, a, out);
    case IR_SUM:
    case IR_MEAN:
    case IR_AMAX:
        return infer_reduce(c, in[0], a, out);
    case IR_SOFTMAX:
        *out = *in[0];
        return need_float(c, in[0]) && norm_axis(c, in[0], &a->axis);
    case IR_LAYERNORM:
        return infer_norm(c, in, 3, a->eps, out);
    case IR_RMSNORM:
        return infer_norm(c, in, 2, a->eps, out);
    case IR_LAYERNORM_DX:
        return infer_norm_dx(c, in, 5, out);
    case IR_RMSNORM_DX:
        return infer_norm_dx(c, in, 4, out);
    case IR_LAYERNORM_RSTD:
    case IR_RMSNORM_RSTD:
        return infer_norm_rstd(c, in[0], a->eps, out);
    case IR_TRANSPOSE:
        return infer_transpose(c, in[0], a, out);
    case IR_RESHAPE:
        return infer_reshape(c, in[0], a, out);
    case IR_EMBEDDING:
        return infer_embedding(c, in[0], in[1], out);
    case IR_MSE:
        return infer_mse(c, in, out);
    case IR_XENT:
        return infer_xent(c, in[0], in[1], out);
    case IR_ALL_REDUCE:
    case IR_REDUCE_SCATTER:
    case IR_ALL_GATHER:
    case IR_ALL_TO_ALL:
    case IR_BROADCAST:
    case IR_SLICE:
        return infer_comm(c, in[0], a, out);
    case IR_IOTA: /* i32[N]: 0 .. N-1 */
        if (a->nlist != 1 || a->list[0] < 1)
            return fail(c, "iota needs a shape of one dimension of size >= 1");
        out->dtype = IR_I32;
        out->rank = 1;
        out->dim[0] = a->list[0];
        return true;
    case IR_CHECK_IDS:
    case IR_CHECK_LABELS: { /* i32[...] unchanged, checked against [0, N) */
        char b[TYPE_LEN];
        if (a->bound < 1)
            return fail(c, "%s needs a bound of 1 or more, got %lld", c->op,
                        (long long)a->bound);
        if (in[0]->dtype != IR_I32)
            return fail(c, "%s needs i32 ids, got %s", c->op, tstr(b, in[0]));
        *out = *in[0];
        return true;
    }
    case IR_NARROW:
        return infer_narrow(c, in[0], a, out);
    case IR_CONCAT:
        return infer_concat(c, in, a, out);
    case IR_INSERT:
        return same_dtype(c, in, 2) && infer_insert(c, in[0], in[1], a, out);
    case IR_EXTRACT:
        return infer_extract(c, in[0], a, out);
    case IR_NOPS:
        break;
    }
    su_unreachable();
}

bool ir_infer(const ir_mesh *mesh, ir_opcode code, const ir_type *const *in, int nin,
              ir_attrs *a, ir_type *out, char *err, size_t errlen)
{
    ctx c = {.mesh = mesh, .code = code, .nin = nin, .err = err, .errlen = errlen};
    ir_attrs none;
    if ((int)code < 0 || (int)code >= IR_NOPS)
        return fail(&c, "unknown op (%d)", (int)code);
    /* Symbols are quoted so they read as names in a sentence. */
    const char *d = ir_op_display(code);
    size_t k = 0, len = strlen(d);
    bool quote = !isalpha((unsigned char)d[0]);
    if (quote)
        c.op[k++] = '\'';
    for (size_t i = 0; i < len && k + 2 < sizeof c.op; i++)
        c.op[k++] = d[i];
    if (quote)
        c.op[k++] = '\'';
    c.op[k] = 0;
    if (!a) {
        memset(&none, 0, sizeof none);
        a = &none;
    }
    if (!check_operands(&c, in, nin))
        return false;
    for (int i = 0; i < nin; i++)
        if (in[i]->dtype == IR_BOOL && !takes_bool(code) && !(code == IR_WHERE && i == 0))
            return fail(&c, "%s of bool is not supported (cast it first, e.g. cast(x, f32))",
                        c.op);
    memset(out, 0, sizeof *out);
    if (a->heads_inner && (ir_ops[code].attrs & IR_A_HEADS)) {
        /* q, k, v, dy that hold their heads inner as [..., H, S, d] (dims -3
         * and -2 swapped), the result back as stored where it does; st,
         * pos, lse and the statistics' results as they are */
        int nt = ir_attn_layout_operands(code);
        if (a->heads_inner & ~ir_heads_all(code))
            return fail(&c, "%s's heads_inner (0x%x) names operands it does not have (its "
                        "own: 0x%x)", c.op, (unsigned)a->heads_inner, ir_heads_all(code));
        ir_type sw[IR_MAX_RANK];
        const ir_type *lin[8];
        for (int i = 0; i < nin && i < 8; i++) {
            lin[i] = in[i];
            if (i >= nt || !(a->heads_inner >> i & 1))
                continue;
            if (in[i]->rank < 3)
                return fail(&c, "%s with heads_inner needs operands of rank 3 or more, got "
                            "operand %d of rank %d", c.op, i + 1, in[i]->rank);
            sw[i] = ir_type_swap_heads(in[i]);
            lin[i] = &sw[i];
        }
        if (!infer_op(&c, lin, a, out))
            return false;
        if (a->heads_inner & IR_HEADS_RESULT)
            *out = ir_type_swap_heads(out);
        return check_type(&c, out, -1);
    }
    return infer_op(&c, in, a, out) && check_type(&c, out, -1);
}
