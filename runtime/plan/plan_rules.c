/* plan_rules.c: the checks every part of a plan shares (types, shardings,
 * groups of ranks), and the shape rule of every opcode on local shapes
 * (rt_instr_check), so kernels can trust the shapes they are given.
 *
 * The compiler decides the same shapes in ir/infer.c, on the IR's types.
 * The rules are written twice because the runtime never includes the IR
 * (docs/design.md, Layout): a plan is checked where no compiler is
 * installed, and the plan's instructions are not the IR's ops (buckets,
 * microbatch slices, send and recv, local shapes). Each rule here states
 * the IR rule it follows; the plan reader's tests and fuzzing hold them
 * to it (tests/unit/runtime/test_plan.c, tests/fuzz/fuzz_plan.c).
 */
#include "runtime/plan/plan.h"
#include "runtime/plan/plan_check.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

bool rt_check_float_dtype(int dtype)
{
    return dtype == RT_F32 || dtype == RT_F16 || dtype == RT_BF16;
}

bool rt_type_eq(const rt_type *a, const rt_type *b)
{
    if (a->dtype != b->dtype || a->rank != b->rank)
        return false;
    for (int i = 0; i < a->rank && i < RT_MAX_RANK; i++)
        if (a->dim[i] != b->dim[i])
            return false;
    return true;
}

const char *rt_type_text(char buf[TYPE_LEN], const rt_type *t)
{
    return rt_type_str(t, buf, TYPE_LEN);
}

/* A type the runtime can hold: known dtype, rank 0..8, dims >= 1, a byte
 * count that fits in int64. what names it in the message. */
bool rt_check_type(const rt_type *t, const char *what, su_status *err)
{
    if (t->dtype >= RT_NDTYPES)
        return rt_plan_fail(err, "%s has an unknown dtype (%d)", what, t->dtype);
    if (t->rank > RT_MAX_RANK)
        return rt_plan_fail(err, "%s has rank %d; at most %d dimensions are supported", what,
                            t->rank, RT_MAX_RANK);
    int64_t n = rt_dtype_size(t->dtype);
    for (int i = 0; i < t->rank; i++) {
        char b[TYPE_LEN];
        if (t->dim[i] < 1)
            return rt_plan_fail(err, "%s has a dimension of size %lld: %s", what,
                                (long long)t->dim[i], rt_type_text(b, t));
        if (__builtin_mul_overflow(n, t->dim[i], &n))
            return rt_plan_fail(err, "%s is too large: %s", what, rt_type_text(b, t));
    }
    return true;
}

/* The size of mesh axis ax, checked against the mesh (rt_instr_check may
 * run on a plan whose mesh was never validated). */
bool rt_check_axis_size(const rt_plan *p, int ax, int64_t *size, su_status *err)
{
    if (ax >= p->naxes || ax >= RT_MAX_AXES)
        return rt_plan_fail(err, "mesh axis %d is out of range (the mesh has %d axes)", ax,
                            p->naxes);
    if (p->axis_size[ax] < 1)
        return rt_plan_fail(err, "mesh axis %d has size %lld", ax, (long long)p->axis_size[ax]);
    *size = p->axis_size[ax];
    return true;
}

/* The local shard of an I/O entry's global type: dim d divided by the
 * product of the sizes of the axes splitting it. Checks the type and the
 * sharding on the way: axes in range, none used twice (partial axes
 * included), every split dim divisible, no axes on dims past the rank. */
bool rt_io_local(const rt_plan *p, const rt_io *io, rt_type *local, su_status *err)
{
    const rt_sharding *sh = &io->sh;
    if (!rt_check_type(&io->type, "the type", err))
        return false;
    *local = io->type;
    unsigned used = 0;
    for (int d = 0; d < RT_MAX_RANK; d++) {
        if (sh->naxes[d] > RT_MAX_AXES)
            return rt_plan_fail(err, "dimension %d is split over %d mesh axes; at most %d", d,
                                sh->naxes[d], RT_MAX_AXES);
        if (d >= io->type.rank && sh->naxes[d])
            return rt_plan_fail(err, "the sharding splits dimension %d of a rank-%d type", d,
                                io->type.rank);
        int64_t g = 1, size = 1;
        for (int k = 0; k < sh->naxes[d]; k++) {
            int ax = sh->axes[d][k];
            if (!rt_check_axis_size(p, ax, &size, err))
                return false;
            if (used & (1u << ax))
                return rt_plan_fail(err, "the sharding uses mesh axis %d twice", ax);
            used |= 1u << ax;
            if (__builtin_mul_overflow(g, size, &g))
                return rt_plan_fail(err, "dimension %d is split over too many ranks", d);
        }
        if (d < io->type.rank && io->type.dim[d] % g)
            return rt_plan_fail(err,
                                "dimension %d of size %lld does not divide by %lld, the product of "
                                "the mesh axes splitting it",
                                d, (long long)io->type.dim[d], (long long)g);
        if (d < io->type.rank)
            local->dim[d] /= g;
    }
    if (p->naxes >= 0 && p->naxes < 16 && (io->sh.partial >> p->naxes))
        return rt_plan_fail(err, "partial over mesh axes 0x%x, but the mesh has %d axes",
                            (unsigned)io->sh.partial, p->naxes);
    if (io->sh.partial & used)
        return rt_plan_fail(err, "the value is partial over a mesh axis that also splits it");
    return true;
}

/* The number of ranks an instruction's mesh axes span (slice, collectives):
 * 1 to 8 axes, in range, distinct. */
bool rt_check_group_size(const rt_plan *p, const rt_instr *in, int64_t *g, su_status *err)
{
    if (in->naxes < 1 || in->naxes > RT_MAX_AXES)
        return rt_plan_fail(err, "needs 1 to %d mesh axes, got %d", RT_MAX_AXES, in->naxes);
    unsigned used = 0;
    *g = 1;
    for (int k = 0; k < in->naxes; k++) {
        int64_t size = 1;
        int ax = in->axes[k];
        if (!rt_check_axis_size(p, ax, &size, err))
            return false;
        if (used & (1u << ax))
            return rt_plan_fail(err, "names mesh axis %d twice", ax);
        used |= 1u << ax;
        if (__builtin_mul_overflow(*g, size, g))
            return rt_plan_fail(err, "spans too many ranks");
    }
    return true;
}

/* ---- the shape rules (LANGUAGE.md §7, as ir/infer.c decides them) ---- */

/* NumPy broadcasting of two shapes aligned at their ends. */
static bool bcast(const int64_t *x, int nx, const int64_t *y, int ny, int64_t *out, uint8_t *nout)
{
    int n = nx > ny ? nx : ny;
    for (int i = 0; i < n; i++) {
        int64_t dx = i < n - nx ? 1 : x[i - (n - nx)];
        int64_t dy = i < n - ny ? 1 : y[i - (n - ny)];
        if (dx != dy && dx != 1 && dy != 1)
            return false;
        out[i] = dx == 1 ? dy : dx;
    }
    *nout = (uint8_t)n;
    return true;
}

/* The first n operands have one dtype. */
static bool same_dtype_n(const rt_instr *in, int n, su_status *err)
{
    for (int i = 1; i < n; i++)
        if (in->in_t[i].dtype != in->in_t[0].dtype)
            return rt_plan_fail(err, "mixed dtypes: operand 1 is %s, operand %d is %s",
                                rt_dtype_name(in->in_t[0].dtype), i + 1,
                                rt_dtype_name(in->in_t[i].dtype));
    return true;
}

static bool same_dtype(const rt_instr *in, su_status *err)
{
    return same_dtype_n(in, in->nin, err);
}

static bool need_float(const rt_type *t, const char *what, su_status *err)
{
    char b[TYPE_LEN];
    if (rt_check_float_dtype(t->dtype))
        return true;
    return rt_plan_fail(err, "%s must be floating-point, got %s", what, rt_type_text(b, t));
}

static bool rule_binary(const rt_instr *in, rt_type *want, su_status *err)
{
    char t1[TYPE_LEN], t2[TYPE_LEN];
    const rt_type *a = &in->in_t[0], *b = &in->in_t[1];
    if (!same_dtype(in, err) ||
        (in->op == RT_OP_POW && !need_float(a, "the base", err)))
        return false;
    want->dtype = a->dtype;
    if (!bcast(a->dim, a->rank, b->dim, b->rank, want->dim, &want->rank))
        return rt_plan_fail(err, "operands do not broadcast: %s and %s", rt_type_text(t1, a),
                            rt_type_text(t2, b));
    return true;
}

/* dropout (x, key[, pos...]): x float; key an i32 scalar; the global
 * shape a multiple of x's, one i32 pos per dim2 bit holding x's rows of
 * that dim; a microbatch's rows within the dim; p in [0, 1). */
static bool rule_dropout(const rt_instr *in, rt_type *want, su_status *err)
{
    char b[TYPE_LEN];
    const rt_type *x = &in->in_t[0];
    if (!need_float(x, "the operand", err))
        return false;
    if (in->in_t[1].dtype != RT_I32 || in->in_t[1].rank != 0)
        return rt_plan_fail(err, "the key is %s, not an i32 scalar", rt_type_text(b, &in->in_t[1]));
    if (!(in->value >= 0 && in->value < 1))
        return rt_plan_fail(err, "the probability %g is not in [0, 1)", in->value);
    if (in->nlist != x->rank)
        return rt_plan_fail(err, "the global shape has %d dims, the operand %d", in->nlist, x->rank);
    int k = 2;
    for (int d = 0; d < x->rank; d++) {
        if (in->list[d] < x->dim[d] || in->list[d] % x->dim[d])
            return rt_plan_fail(err, "global dim %d (%lld) is not a multiple of the operand's",
                                d, (long long)in->list[d]);
        if (!(in->dim2 >> d & 1))
            continue;
        if (k >= in->nin || in->in_t[k].dtype != RT_I32 || in->in_t[k].rank != 1 ||
            in->in_t[k].dim[0] < x->dim[d] + (d == in->dim ? in->offset : 0))
            return rt_plan_fail(err, "dim %d has no i32 positions of its rows", d);
        k++;
    }
    if (k != in->nin || in->dim2 >> x->rank)
        return rt_plan_fail(err, "%d operands for %d split dims", in->nin, k - 2);
    if (in->offset < 0 || (in->offset && (in->dim < 0 || in->dim >= x->rank ||
                                          x->dim[in->dim] + in->offset > in->list[in->dim])))
        return rt_plan_fail(err, "rows %lld .. of dim %lld are outside the global shape",
                            (long long)in->offset, (long long)in->dim);
    *want = *x;
    return true;
}

/* where(c, a, b): c bool, a and b of one dtype, all three broadcasting. */
static bool rule_where(const rt_instr *in, rt_type *want, su_status *err)
{
    char t1[TYPE_LEN], t2[TYPE_LEN], t3[TYPE_LEN];
    const rt_type *c = &in->in_t[0], *a = &in->in_t[1], *b = &in->in_t[2];
    if (c->dtype != RT_BOOL)
        return rt_plan_fail(err, "the condition is %s, not bool", rt_type_text(t1, c));
    if (a->dtype != b->dtype)
        return rt_plan_fail(err, "mixed dtypes: %s and %s", rt_dtype_name(a->dtype),
                            rt_dtype_name(b->dtype));
    rt_type ab;
    memset(&ab, 0, sizeof ab);
    want->dtype = a->dtype;
    if (!bcast(a->dim, a->rank, b->dim, b->rank, ab.dim, &ab.rank) ||
        !bcast(c->dim, c->rank, ab.dim, ab.rank, want->dim, &want->rank))
        return rt_plan_fail(err, "operands do not broadcast: %s, %s and %s",
                            rt_type_text(t1, c), rt_type_text(t2, a), rt_type_text(t3, b));
    return true;
}

/* [..., M, K] @ [..., K, N] -> [..., M, N]; a 1-D operand loses its M or
 * N; the batch dims broadcast. Any dtype, as the IR allows (the CPU backend
 * has an i32 path). */
static bool rule_matmul(const rt_instr *in, rt_type *want, su_status *err)
{
    rt_type ta = in->in_t[0], tb = in->in_t[1]; /* as read: trans swaps the last two dims */
    const rt_type *a = &ta, *b = &tb;
    char t1[TYPE_LEN], t2[TYPE_LEN]; /* made for a message only */
    if (a->rank == 0 || b->rank == 0)
        return rt_plan_fail(err, "needs operands of rank 1 or more, got %s @ %s",
                            rt_type_text(t1, a), rt_type_text(t2, b));
    if (!same_dtype(in, err))
        return false;
    if (in->dim < 0 || in->dim > (RT_TRANS_A | RT_TRANS_B | RT_MM_PARTS))
        return rt_plan_fail(err, "trans %lld is not a, b or ab (with parts: 4 more)",
                            (long long)in->dim);
    bool parts = in->dim & RT_MM_PARTS;
    rt_type *tr[2] = {&ta, &tb};
    for (int i = 0; i < 2; i++) {
        if (!(in->dim >> i & 1))
            continue;
        if (tr[i]->rank < 2 || tr[i]->dtype == RT_I32)
            return rt_plan_fail(err, "reads operand %d transposed, which needs a float matrix, "
                                "got %s", i + 1, rt_type_text(t1, &in->in_t[i]));
        int r = tr[i]->rank;
        int64_t d = tr[i]->dim[r - 2];
        tr[i]->dim[r - 2] = tr[i]->dim[r - 1];
        tr[i]->dim[r - 1] = d;
    }
    int64_t ka = a->dim[a->rank - 1], kb = b->dim[b->rank == 1 ? 0 : b->rank - 2];
    if (ka != kb)
        return rt_plan_fail(err, "contracts dimension of size %lld with one of size %lld: %s @ %s",
                            (long long)ka, (long long)kb, rt_type_text(t1, a),
                            rt_type_text(t2, b));
    if (parts && (a->dtype != RT_BF16 || ka % 3))
        return rt_plan_fail(err, "of parts reads bf16 parts, 3 of them along the contracted "
                            "dimension, got %s @ %s", rt_type_text(t1, a), rt_type_text(t2, b));
    int na = a->rank >= 2 ? a->rank - 2 : 0, nb = b->rank >= 2 ? b->rank - 2 : 0;
    if (!bcast(a->dim, na, b->dim, nb, want->dim, &want->rank))
        return rt_plan_fail(err, "batch dimensions do not broadcast: %s @ %s",
                            rt_type_text(t1, a), rt_type_text(t2, b));
    want->dtype = parts ? RT_F32 : a->dtype;
    if (a->rank >= 2)
        want->dim[want->rank++] = a->dim[a->rank - 2];
    if (b->rank >= 2)
        want->dim[want->rank++] = b->dim[b->rank - 1];
    return true;
}

/* The query positions of a causal attention or attn_probs, operand i
 * when given: i32[S] for q [..., S, d]. */
static bool rule_pos(const rt_instr *in, int i, su_status *err)
{
    if (in->nin <= i)
        return true;
    const rt_type *q = &in->in_t[0], *pos = &in->in_t[i];
    char tq[TYPE_LEN], tp[TYPE_LEN];
    if (!in->causal)
        return rt_plan_fail(err, "takes query positions only when causal");
    if (pos->dtype != RT_I32 || pos->rank != 1 || pos->dim[0] != q->dim[q->rank - 2])
        return rt_plan_fail(err, "needs query positions i32[S] for q %s, got %s", rt_type_text(tq, q),
                            rt_type_text(tp, pos));
    return true;
}

/* Whether k's (or v's) leading dims are q's (rank r each): equal, but for
 * the heads (dim -3) of a rank of 3 or more, where k may have G heads that
 * divide q's H (grouped-query attention, format 21: query head h reads key
 * head h / (H / G)). */
static bool kv_lead(const rt_type *q, const rt_type *k, int r)
{
    for (int i = 0; i < r - 2; i++)
        if (k->dim[i] != q->dim[i] &&
            !(i == r - 3 && k->dim[i] > 0 && q->dim[i] % k->dim[i] == 0))
            return false;
    return true;
}

/* q [..., S, d], k [..., T, d], v [..., T, dv] -> [..., S, dv]; the
 * leading dims agree exactly, but that k and v may have fewer heads than q
 * (kv_lead). */
static bool rule_attention(const rt_instr *in, rt_type *want, su_status *err)
{
    static const char *const names[] = {"q", "k", "v"};
    const rt_type *q = &in->in_t[0], *k = &in->in_t[1], *v = &in->in_t[2];
    char tq[TYPE_LEN], tk[TYPE_LEN], tv[TYPE_LEN];
    for (int i = 0; i < 3; i++)
        if (in->in_t[i].rank < 2)
            return rt_plan_fail(err, "needs %s of rank 2 or more, got %s", names[i],
                                rt_type_text(tq, &in->in_t[i]));
    if (!same_dtype_n(in, 3, err) || !need_float(q, "q", err) ||
        !rule_pos(in, 3, err))
        return false;
    /* the types as text only for a message (most plans have none) */
    int r = q->rank;
    bool lead = k->rank == r && v->rank == r && kv_lead(q, k, r);
    for (int i = 0; lead && i < r - 2; i++)
        lead = v->dim[i] == k->dim[i];
    if (!lead)
        return rt_plan_fail(err, "needs q, k and v with the same leading dimensions, got %s, %s "
                            "and %s", rt_type_text(tq, q), rt_type_text(tk, k),
                            rt_type_text(tv, v));
    if (q->dim[r - 1] != k->dim[r - 1])
        return rt_plan_fail(err, "needs q and k with the same last dimension, got %s and %s",
                            rt_type_text(tq, q), rt_type_text(tk, k));
    if (k->dim[r - 2] != v->dim[r - 2])
        return rt_plan_fail(err, "needs k and v with the same sequence length, got %s and %s",
                            rt_type_text(tk, k), rt_type_text(tv, v));
    *want = *q;
    want->dim[r - 1] = v->dim[r - 1];
    return true;
}

static bool check_axis(const rt_instr *in, su_status *err)
{
    char b[TYPE_LEN];
    if (in->axis < 0 || in->axis >= in->in_t[0].rank)
        return rt_plan_fail(err, "axis %lld is out of range for %s", (long long)in->axis,
                            rt_type_text(b, &in->in_t[0]));
    return true;
}

static bool rule_reduce(const rt_instr *in, rt_type *want, su_status *err)
{
    const rt_type *x = &in->in_t[0];
    if ((in->op == RT_OP_MEAN && !need_float(x, "the operand", err)) ||
        !check_axis(in, err))
        return false;
    *want = *x;
    if (in->keepdims) {
        want->dim[in->axis] = 1;
        return true;
    }
    for (int i = (int)in->axis; i + 1 < x->rank; i++)
        want->dim[i] = x->dim[i + 1];
    want->dim[--want->rank] = 0;
    return true;
}

/* layernorm(x, g, b) and rmsnorm(x, g) over the last dim of x. */
static bool rule_norm(const rt_instr *in, rt_type *want, su_status *err)
{
    static const char *const names[] = {"x", "g", "b"};
    const rt_type *x = &in->in_t[0];
    char tx[TYPE_LEN], tp[TYPE_LEN];
    if (x->rank < 1)
        return rt_plan_fail(err, "needs x of rank 1 or more, got %s", rt_type_text(tx, x));
    if (!same_dtype(in, err) || !need_float(x, "x", err))
        return false;
    int64_t d = x->dim[x->rank - 1];
    for (int i = 1; i < in->nin; i++)
        if (in->in_t[i].rank != 1 || in->in_t[i].dim[0] != d)
            return rt_plan_fail(err, "needs %s of shape [%lld] to match the last dimension of %s, "
                                "got %s", names[i], (long long)d, rt_type_text(tx, x),
                                rt_type_text(tp, &in->in_t[i]));
    if (!(in->eps > 0))
        return rt_plan_fail(err, "needs eps > 0, got %g", in->eps);
    *want = *x;
    return true;
}

/* layernorm_rstd (x) and rmsnorm_rstd (x): x's type, the last dim 1. */
static bool rule_norm_rstd(const rt_instr *in, rt_type *want, su_status *err)
{
    const rt_type *x = &in->in_t[0];
    char tx[TYPE_LEN];
    if (x->rank < 1)
        return rt_plan_fail(err, "needs x of rank 1 or more, got %s", rt_type_text(tx, x));
    if (!need_float(x, "x", err))
        return false;
    if (!(in->eps > 0))
        return rt_plan_fail(err, "needs eps > 0, got %g", in->eps);
    *want = *x;
    want->dim[want->rank - 1] = 1;
    return true;
}

/* layernorm_dx (dy, x, mean, rstd, g) and rmsnorm_dx (dy, x, r, g). */
static bool rule_norm_dx(const rt_instr *in, rt_type *want, su_status *err)
{
    const rt_type *dy = &in->in_t[0], *x = &in->in_t[1], *g = &in->in_t[in->nin - 1];
    char t1[TYPE_LEN], t2[TYPE_LEN];
    if (!same_dtype(in, err) || !need_float(dy, "dy", err))
        return false;
    if (dy->rank < 1 || !rt_type_eq(dy, x))
        return rt_plan_fail(err, "needs dy and x of one type, got %s and %s",
                            rt_type_text(t1, dy), rt_type_text(t2, x));
    int r = dy->rank;
    for (int i = 2; i < in->nin - 1; i++) {
        const rt_type *s = &in->in_t[i];
        bool ok = s->rank == r && s->dim[r - 1] == 1;
        for (int d = 0; ok && d < r - 1; d++)
            ok = s->dim[d] == dy->dim[d];
        if (!ok)
            return rt_plan_fail(err, "needs its statistics of shape [..., 1] for x %s, got %s",
                                rt_type_text(t1, x), rt_type_text(t2, s));
    }
    if (g->rank != 1 || g->dim[0] != dy->dim[r - 1])
        return rt_plan_fail(err, "needs g of shape [%lld], got %s", (long long)dy->dim[r - 1],
                            rt_type_text(t1, g));
    *want = *dy;
    return true;
}

static bool rule_transpose(const rt_instr *in, rt_type *want, su_status *err)
{
    const rt_type *x = &in->in_t[0];
    bool used[RT_MAX_RANK] = {false};
    bool perm = in->nlist == x->rank;
    for (int i = 0; perm && i < in->nlist; i++) {
        int64_t p = in->list[i];
        perm = p >= 0 && p < x->rank && !used[p];
        if (perm) {
            used[p] = true;
            want->dim[i] = x->dim[p];
        }
    }
    if (!perm) {
        char tx[TYPE_LEN], tl[TYPE_LEN];
        size_t k = (size_t)snprintf(tl, sizeof tl, "[");
        for (int i = 0; i < in->nlist && k < sizeof tl; i++)
            k += (size_t)snprintf(tl + k, sizeof tl - k, "%s%lld", i ? ", " : "",
                                  (long long)in->list[i]);
        if (k < sizeof tl)
            snprintf(tl + k, sizeof tl - k, "]");
        return rt_plan_fail(err, "needs a permutation of the %d axes of %s, got %s", x->rank,
                            rt_type_text(tx, x), tl);
    }
    want->dtype = x->dtype;
    want->rank = x->rank;
    return true;
}

/* table [V, D] and i32 ids [...] -> [..., D]. */
static bool rule_embedding(const rt_instr *in, rt_type *want, su_status *err)
{
    const rt_type *table = &in->in_t[0], *ids = &in->in_t[1];
    char b[TYPE_LEN];
    if (table->rank != 2 || !rt_check_float_dtype(table->dtype))
        return rt_plan_fail(err, "the table must be a 2-D floating-point tensor, got %s",
                            rt_type_text(b, table));
    if (ids->dtype != RT_I32)
        return rt_plan_fail(err, "the ids must be i32, got %s", rt_type_text(b, ids));
    if (ids->rank + 1 > RT_MAX_RANK)
        return rt_plan_fail(err, "ids %s would give a result of rank %d; at most %d",
                            rt_type_text(b, ids), ids->rank + 1, RT_MAX_RANK);
    want->dtype = table->dtype;
    want->rank = (uint8_t)(ids->rank + 1);
    memcpy(want->dim, ids->dim, (size_t)ids->rank * sizeof *ids->dim);
    want->dim[ids->rank] = table->dim[1];
    return true;
}

static bool rule_mse(const rt_instr *in, rt_type *want, su_status *err)
{
    char t1[TYPE_LEN], t2[TYPE_LEN];
    if (!need_float(&in->in_t[0], "the prediction", err))
        return false;
    if (!rt_type_eq(&in->in_t[0], &in->in_t[1]))
        return rt_plan_fail(err, "needs operands of the same type, got %s and %s",
                            rt_type_text(t1, &in->in_t[0]), rt_type_text(t2, &in->in_t[1]));
    want->dtype = in->in_t[0].dtype;
    return true;
}

/* logits [..., C] and i32 labels [...] -> a scalar. */
static bool rule_xent(const rt_instr *in, rt_type *want, su_status *err)
{
    const rt_type *logits = &in->in_t[0], *labels = &in->in_t[1];
    char t1[TYPE_LEN], t2[TYPE_LEN];
    if (logits->rank < 1 || !rt_check_float_dtype(logits->dtype))
        return rt_plan_fail(err, "needs floating-point logits of rank 1 or more, got %s",
                            rt_type_text(t1, logits));
    if (labels->dtype != RT_I32)
        return rt_plan_fail(err, "the labels must be i32, got %s", rt_type_text(t2, labels));
    bool match = labels->rank == logits->rank - 1;
    for (int i = 0; match && i < labels->rank; i++)
        match = labels->dim[i] == logits->dim[i];
    if (!match)
        return rt_plan_fail(err, "the labels %s do not match the leading dimensions of the "
                            "logits %s", rt_type_text(t2, labels), rt_type_text(t1, logits));
    want->dtype = logits->dtype;
    return true;
}

/* cross_entropy_lse (logits): f32 of the logits' shape, the last dim 1. */
static bool rule_xent_lse(const rt_type *logits, rt_type *want, su_status *err)
{
    char t1[TYPE_LEN];
    if (logits->rank < 1 || !rt_check_float_dtype(logits->dtype))
        return rt_plan_fail(err, "needs floating-point logits of rank 1 or more, got %s",
                            rt_type_text(t1, logits));
    *want = *logits;
    want->dtype = RT_F32;
    want->dim[want->rank - 1] = 1;
    return true;
}

/* cross_entropy_grad's third operand: its logits' cross_entropy_lse. */
static bool rule_xent_lse_operand(const rt_instr *in, su_status *err)
{
    rt_type want;
    char t1[TYPE_LEN], t2[TYPE_LEN];
    if (!rule_xent_lse(&in->in_t[0], &want, err))
        return false;
    if (!rt_type_eq(&in->in_t[2], &want))
        return rt_plan_fail(err, "needs the rows' log-sum-exp as %s, got %s",
                            rt_type_text(t1, &want), rt_type_text(t2, &in->in_t[2]));
    return true;
}

/* expand: x broadcast to out_t (NumPy's broadcast_to: x aligned at the
 * end, each of its dims 1 or equal); the result's shape is the attribute. */
static bool rule_expand(const rt_instr *in, rt_type *want, su_status *err)
{
    const rt_type *x = &in->in_t[0], *out = &in->out_t;
    char t1[TYPE_LEN], t2[TYPE_LEN];
    int off = out->rank - x->rank;
    bool ok = off >= 0;
    for (int i = 0; ok && i < x->rank; i++)
        ok = x->dim[i] == 1 || x->dim[i] == out->dim[i + off];
    if (!ok)
        return rt_plan_fail(err, "cannot expand %s to the shape of %s", rt_type_text(t1, x),
                            rt_type_text(t2, out));
    *want = *out;
    want->dtype = x->dtype;
    return true;
}

/* attn_stats (q, k, v, dy[, pos]) -> f32 [..., S, 2]; attn_dq and attn_dk
 * (q, k, v, dy, st[, pos]) -> q's and k's types; attn_dv (q, k, dy, st[,
 * pos]) -> [..., T, dv] (plan_ops.def). The leading dims agree exactly. */
static bool rule_attn_grad(const rt_instr *in, rt_type *want, su_status *err)
{
    bool has_v = in->op != RT_OP_ATTN_DV, has_st = in->op != RT_OP_ATTN_STATS;
    int nt = has_v ? 4 : 3; /* the operands of q's dtype */
    const rt_type *q = &in->in_t[0], *k = &in->in_t[1], *v = has_v ? &in->in_t[2] : NULL;
    const rt_type *dy = &in->in_t[nt - 1], *st = has_st ? &in->in_t[nt] : NULL;
    char t1[TYPE_LEN], t2[TYPE_LEN];
    if (q->rank < 2)
        return rt_plan_fail(err, "needs q of rank 2 or more, got %s", rt_type_text(t1, q));
    if (!same_dtype_n(in, nt, err) || !need_float(q, "q", err) || !rule_pos(in, nt + has_st, err))
        return false;
    int r = q->rank;
    bool ok = k->rank == r && dy->rank == r && (!v || v->rank == r) && kv_lead(q, k, r);
    for (int i = 0; ok && i < r - 2; i++)
        ok = dy->dim[i] == q->dim[i] && (!v || v->dim[i] == k->dim[i]);
    ok = ok && k->dim[r - 1] == q->dim[r - 1] && dy->dim[r - 2] == q->dim[r - 2] &&
         (!v || (v->dim[r - 2] == k->dim[r - 2] && v->dim[r - 1] == dy->dim[r - 1]));
    if (!ok)
        return rt_plan_fail(err, "needs q [..., S, d], k [..., T, d], v [..., T, dv] and dy "
                            "[..., S, dv], got q %s and k %s", rt_type_text(t1, q),
                            rt_type_text(t2, k));
    if (st) {
        ok = st->dtype == RT_F32 && st->rank == r && st->dim[r - 1] == 2;
        for (int i = 0; ok && i < r - 1; i++)
            ok = st->dim[i] == q->dim[i];
        if (!ok)
            return rt_plan_fail(err, "needs the statistics f32[..., S, 2] for q %s, got %s",
                                rt_type_text(t1, q), rt_type_text(t2, st));
    }
    *want = in->op == RT_OP_ATTN_STATS || in->op == RT_OP_ATTN_DQ ? *q : *k;
    if (in->op == RT_OP_ATTN_STATS) {
        want->dtype = RT_F32;
        want->dim[r - 1] = 2;
    } else if (in->op == RT_OP_ATTN_DV)
        want->dim[r - 1] = dy->dim[r - 1];
    return true;
}

/* attn_delta (y, dy, lse) -> f32 [..., S, 2]: y and dy [..., S, dv] of one
 * float type, lse f32 [..., S]. */
static bool rule_attn_delta(const rt_instr *in, rt_type *want, su_status *err)
{
    const rt_type *y = &in->in_t[0], *dy = &in->in_t[1], *lse = &in->in_t[2];
    char t1[TYPE_LEN], t2[TYPE_LEN];
    if (y->rank < 2)
        return rt_plan_fail(err, "needs y of rank 2 or more, got %s", rt_type_text(t1, y));
    if (!need_float(y, "y", err))
        return false;
    if (!rt_type_eq(y, dy))
        return rt_plan_fail(err, "needs y and dy of one type, got %s and %s",
                            rt_type_text(t1, y), rt_type_text(t2, dy));
    int r = y->rank;
    bool ok = lse->dtype == RT_F32 && lse->rank == r - 1;
    for (int i = 0; ok && i < r - 1; i++)
        ok = lse->dim[i] == y->dim[i];
    if (!ok)
        return rt_plan_fail(err, "needs lse f32[..., S] for y %s, got %s", rt_type_text(t1, y),
                            rt_type_text(t2, lse));
    *want = *y;
    want->dtype = RT_F32;
    want->dim[r - 1] = 2;
    return true;
}

/* attn_probs: q [..., S, d], k [..., T, d] -> [..., S, T]; attn_lse's k
 * may have fewer heads (kv_lead). */
static bool rule_attn_probs(const rt_instr *in, rt_type *want, su_status *err)
{
    const rt_type *q = &in->in_t[0], *k = &in->in_t[1];
    char tq[TYPE_LEN], tk[TYPE_LEN];
    if (q->rank < 2)
        return rt_plan_fail(err, "needs q of rank 2 or more, got %s", rt_type_text(tq, q));
    if (!same_dtype_n(in, 2, err) || !need_float(q, "q", err) ||
        !rule_pos(in, 2, err))
        return false;
    int r = q->rank;
    bool ok = k->rank == r && k->dim[r - 1] == q->dim[r - 1];
    for (int i = 0; ok && i < r - 2; i++)
        ok = k->dim[i] == q->dim[i];
    if (!ok && in->op == RT_OP_ATTN_LSE)
        ok = k->rank == r && k->dim[r - 1] == q->dim[r - 1] && kv_lead(q, k, r);
    if (!ok)
        return rt_plan_fail(err, "needs q and k with the same leading and last dimensions, got "
                            "%s and %s", rt_type_text(tq, q), rt_type_text(tk, k));
    *want = *q;
    want->dim[r - 1] = k->dim[r - 2];
    return true;
}

/* embedding_grad: i32 ids [...] and dy [..., D] -> [V, D]; V is the
 * result's (the table's rows). */
static bool rule_embedding_grad(const rt_instr *in, rt_type *want, su_status *err)
{
    const rt_type *ids = &in->in_t[0], *dy = &in->in_t[1], *out = &in->out_t;
    char t1[TYPE_LEN], t2[TYPE_LEN];
    if (ids->dtype != RT_I32)
        return rt_plan_fail(err, "the ids must be i32, got %s", rt_type_text(t1, ids));
    if (!need_float(dy, "dy", err))
        return false;
    bool ok = dy->rank == ids->rank + 1;
    for (int i = 0; ok && i < ids->rank; i++)
        ok = dy->dim[i] == ids->dim[i];
    if (!ok)
        return rt_plan_fail(err, "needs dy of shape [ids..., D], got ids %s and dy %s",
                            rt_type_text(t1, ids), rt_type_text(t2, dy));
    if (out->rank != 2)
        return rt_plan_fail(err, "needs a result of shape [V, %lld], got %s",
                            (long long)dy->dim[dy->rank - 1], rt_type_text(t1, out));
    want->dtype = dy->dtype;
    want->rank = 2;
    want->dim[0] = out->dim[0];
    want->dim[1] = dy->dim[dy->rank - 1];
    return true;
}

/* Optimizer updates: every operand of the first one's type, except adamw's
 * step count t, a floating-point scalar; adamw's eps finite and >= 0. */
/* insert, extract: bucket b is [R, M] and v (of b's dtype) takes n/R of
 * its columns from offset (ir/infer.c's bucket rules). */
static bool rule_bucket(const rt_type *b, const rt_type *v, int64_t offset, const char *what,
                        su_status *err)
{
    char b1[TYPE_LEN], b2[TYPE_LEN];
    if (b->rank != 2)
        return rt_plan_fail(err, "a bucket is [rows, columns], not %s", rt_type_text(b1, b));
    if (v->dtype != b->dtype)
        return rt_plan_fail(err, "%s %s and the bucket %s differ in dtype", what, rt_type_text(b1, v),
                            rt_type_text(b2, b));
    int64_t n = rt_type_numel(v);
    if (n % b->dim[0])
        return rt_plan_fail(err, "%s %s does not split into the %lld rows of the bucket", what,
                            rt_type_text(b1, v), (long long)b->dim[0]);
    if (offset < 0 || offset > b->dim[1] || n / b->dim[0] > b->dim[1] - offset)
        return rt_plan_fail(err, "%s %s at column %lld does not fit the bucket %s", what,
                            rt_type_text(b1, v), (long long)offset, rt_type_text(b2, b));
    return true;
}

static bool rule_optim(const rt_instr *in, rt_type *want, su_status *err)
{
    const rt_type *x = &in->in_t[0];
    char t1[TYPE_LEN], t2[TYPE_LEN];
    if (!need_float(x, "the operand", err))
        return false;
    int n = in->op == RT_OP_ADAMW ? 3 : in->nin;
    for (int i = 1; i < n; i++)
        if (!rt_type_eq(&in->in_t[i], x))
            return rt_plan_fail(err, "needs operands of one type, got %s and %s", rt_type_text(t1, x),
                                rt_type_text(t2, &in->in_t[i]));
    if (in->op == RT_OP_ADAMW) {
        const rt_type *t = &in->in_t[3];
        if (t->rank != 0 || !rt_check_float_dtype(t->dtype))
            return rt_plan_fail(err, "needs a floating-point scalar step count, got %s",
                                rt_type_text(t1, t));
        if (!(isfinite(in->eps) && in->eps >= 0))
            return rt_plan_fail(err, "needs a finite eps >= 0, got %g", in->eps);
    }
    *want = *x;
    return true;
}

/* Slice and collectives, local shapes, NCCL semantics: slice and
 * reduce_scatter divide dim by the group size G, all_gather multiplies it,
 * all_to_all divides dim and multiplies dim2. */
static bool rule_group(const rt_plan *p, const rt_instr *in, rt_type *want, su_status *err)
{
    const rt_type *x = &in->in_t[0];
    char b[TYPE_LEN];
    int64_t g = 1;
    if (!rt_check_group_size(p, in, &g, err))
        return false;
    *want = *x;
    int op = in->op;
    if (op == RT_OP_ALL_REDUCE || op == RT_OP_BROADCAST)
        return true;
    if (in->dim < 0 || in->dim >= x->rank)
        return rt_plan_fail(err, "dimension %lld is out of range for %s", (long long)in->dim,
                            rt_type_text(b, x));
    if (op == RT_OP_ALL_TO_ALL && (in->dim2 < 0 || in->dim2 >= x->rank))
        return rt_plan_fail(err, "dimension %lld is out of range for %s", (long long)in->dim2,
                            rt_type_text(b, x));
    if (op != RT_OP_ALL_GATHER) {
        if (x->dim[in->dim] % g)
            return rt_plan_fail(err, "cannot split dimension %lld of %s over %lld ranks",
                                (long long)in->dim, rt_type_text(b, x), (long long)g);
        want->dim[in->dim] /= g;
    }
    int64_t grow = op == RT_OP_ALL_GATHER ? in->dim : op == RT_OP_ALL_TO_ALL ? in->dim2 : -1;
    if (grow >= 0 && __builtin_mul_overflow(want->dim[grow], g, &want->dim[grow]))
        return rt_plan_fail(err, "the result is too large: dimension %lld of %s times %lld ranks",
                            (long long)grow, rt_type_text(b, x), (long long)g);
    return true;
}

/* send and recv: a plan with a pipeline axis, a peer stage in range (not
 * the program's own: check_in_program knows it), and a send's missing
 * result (out = -1) typed as its operand. */
static bool rule_p2p(const rt_plan *p, const rt_instr *in, su_status *err)
{
    char b1[TYPE_LEN], b2[TYPE_LEN];
    if (p->stage_axis < 0)
        return rt_plan_fail(err, "needs a pipeline axis, but the plan has none");
    if (in->dim < 0 || in->dim >= p->nstages)
        return rt_plan_fail(err, "peer stage %lld is out of range (the plan has %d stages)",
                            (long long)in->dim, p->nstages);
    if (in->op == RT_OP_RECV)
        return true;
    if (in->out != -1)
        return rt_plan_fail(err, "a send has no result: out must be -1, not %d", in->out);
    if (!rt_type_eq(&in->out_t, &in->in_t[0]))
        return rt_plan_fail(err, "out_t is %s, but a send's is its operand's type %s",
                            rt_type_text(b1, &in->out_t), rt_type_text(b2, &in->in_t[0]));
    return true;
}

bool rt_is_io_source(int op)
{
    return op == RT_OP_INPUT || op == RT_OP_PARAM || op == RT_OP_STATE;
}

/* input, param and state: the entry exists, has the op's kind, and out_t
 * is its local shard. (Which stage holds it is rt_plan_validate's check.) */
static bool rule_source(const rt_plan *p, const rt_instr *in, su_status *err)
{
    su_status msg;
    char b1[TYPE_LEN], b2[TYPE_LEN];
    int kind = in->op == RT_OP_INPUT   ? RT_IO_INPUT
               : in->op == RT_OP_PARAM ? RT_IO_PARAM
                                       : RT_IO_STATE;
    if (in->io < 0 || in->io >= p->nio || !p->io)
        return rt_plan_fail(err, "I/O entry %d is out of range (the plan has %d)", in->io, p->nio);
    const rt_io *io = &p->io[in->io];
    if (io->kind != kind)
        return rt_plan_fail(err, "I/O entry %d is not %s", in->io,
                            kind == RT_IO_INPUT   ? "an input"
                            : kind == RT_IO_PARAM ? "a parameter"
                                          : "a state");
    rt_type local;
    if (!rt_io_local(p, io, &local, &msg))
        return rt_plan_wrap(err, &msg, "I/O entry %d: ", in->io);
    if (!rt_type_eq(&local, &in->out_t))
        return rt_plan_fail(err, "the result is %s, but the local shard of I/O entry %d is %s",
                            rt_type_text(b1, &in->out_t), in->io, rt_type_text(b2, &local));
    return true;
}

/* The opcode, the operand count, the types of the operands and the
 * result, and the list and axis counts every instruction stores. */
bool rt_check_operands(const rt_instr *in, su_status *err)
{
    if (in->op >= RT_NOPS)
        return rt_plan_fail(err, "unknown opcode %d", in->op);
    const rt_opinfo *info = &rt_ops[in->op];
    if (in->nin < info->min_in || in->nin > info->max_in) {
        if (info->min_in == info->max_in)
            return rt_plan_fail(err, "has %d operands; %s takes %d", in->nin, info->name,
                                info->min_in);
        return rt_plan_fail(err, "has %d operands; %s takes %d to %d", in->nin, info->name,
                            info->min_in, info->max_in);
    }
    static const char *const operand[] = {"operand 1", "operand 2", "operand 3", "operand 4",
                                          "operand 5", "operand 6", "operand 7", "operand 8"};
    for (int i = 0; i < in->nin; i++) {
        char what[32];
        const char *name = operand[i < 8 ? i : 0]; /* most instructions: no printf, no copy */
        if (i >= 8) {
            snprintf(what, sizeof what, "operand %d", i + 1);
            name = what;
        }
        if (!rt_check_type(&in->in_t[i], name, err))
            return false;
    }
    if (!rt_check_type(&in->out_t, "the result", err))
        return false;
    if (in->nlist > RT_MAX_RANK)
        return rt_plan_fail(err, "has a list of %d entries; at most %d", in->nlist, RT_MAX_RANK);
    if (in->naxes > RT_MAX_AXES)
        return rt_plan_fail(err, "names %d mesh axes; at most %d", in->naxes, RT_MAX_AXES);
    const double hyper[] = {in->lr, in->momentum, in->beta1, in->beta2, in->wd};
    static const char *const hyper_names[] = {"lr", "momentum", "beta1", "beta2", "wd"};
    for (int i = 0; i < 5; i++)
        if (!isfinite(hyper[i]))
            return rt_plan_fail(err, "%s %g is not finite", hyper_names[i], hyper[i]);
    return true;
}

static bool is_unary(int op)
{
    return (op >= RT_OP_NEG && op <= RT_OP_RSQRT) || op == RT_OP_SIN || op == RT_OP_COS;
}

static bool is_compare(int op)
{
    return op >= RT_OP_LESS && op <= RT_OP_NOT_EQUAL;
}

/* Whether op may read a bool operand (as ir/infer.c allows): equality,
 * where, cast, and the ops that only move elements. */
static bool takes_bool(int op)
{
    switch (op) {
    case RT_OP_EQUAL: case RT_OP_NOT_EQUAL: case RT_OP_WHERE: case RT_OP_CAST:
    case RT_OP_COPY: case RT_OP_TRANSPOSE: case RT_OP_EXPAND: case RT_OP_NARROW:
    case RT_OP_CONCAT: case RT_OP_SLICE: case RT_OP_ALL_GATHER: case RT_OP_ALL_TO_ALL:
    case RT_OP_BROADCAST: case RT_OP_SEND: case RT_OP_RECV:
        return true;
    default:
        return false;
    }
}

static bool is_binary(int op)
{
    return (op >= RT_OP_ADD && op <= RT_OP_POW) || op == RT_OP_GT || op == RT_OP_EQ ||
           op == RT_OP_GELU_GRAD || op == RT_OP_SILU_GRAD;
}

/* The message says what is wrong, not which instruction: rt_plan_validate
 * puts "stage S, instruction K (op): " in front. p gives the mesh (group
 * sizes) and the I/O table (input, param). */
bool rt_instr_check(const rt_plan *p, const rt_instr *in, su_status *err)
{
    if (!rt_check_operands(in, err))
        return false;
    int nt = rt_attn_layout_operands(in->op);
    if (nt && in->keepdims) {
        /* heads_inner: checked as the op computes, those of q, k, v, dy and
         * the result (but attn_stats') it names with dims -3 and -2
         * swapped */
        if (in->keepdims & ~rt_heads_all(in->op))
            return rt_plan_fail(err, "holds the heads inner of operands it does not have (mask "
                                "0x%x; its own: 0x%x)", (unsigned)in->keepdims,
                                rt_heads_all(in->op));
        rt_instr l = *in;
        l.keepdims = 0;
        for (int i = 0; i < nt && i < in->nin; i++) {
            if (!(in->keepdims >> i & 1))
                continue;
            if (in->in_t[i].rank < 3)
                return rt_plan_fail(err, "holds its heads inner, which needs operands of rank "
                                    "3 or more, got operand %d of rank %d", i + 1,
                                    in->in_t[i].rank);
            l.in_t[i] = rt_type_swap_heads(&in->in_t[i]);
        }
        if (in->keepdims & RT_HEADS_RESULT) {
            if (in->out_t.rank < 3)
                return rt_plan_fail(err, "holds its heads inner, which needs a result of rank "
                                    "3 or more");
            l.out_t = rt_type_swap_heads(&in->out_t);
        }
        return rt_instr_check(p, &l, err);
    }
    const rt_type *x = &in->in_t[0], *out = &in->out_t;
    char b1[TYPE_LEN], b2[TYPE_LEN];
    rt_type want;
    memset(&want, 0, sizeof want);
    bool ok;
    int op = in->op;
    if (rt_is_io_source(op))
        return rule_source(p, in, err);
    if (op == RT_OP_CONST)
        return isfinite(in->value) ? true
                                   : rt_plan_fail(err, "the value %g is not finite", in->value);
    if (op == RT_OP_SEND || op == RT_OP_RECV)
        return rule_p2p(p, in, err);
    for (int i = 0; i < in->nin; i++)
        if (in->in_t[i].dtype == RT_BOOL && !takes_bool(op) && !(op == RT_OP_WHERE && i == 0))
            return rt_plan_fail(err, "operand %d is bool, which %s does not take", i + 1,
                                rt_ops[op].name);
    if (is_compare(op)) {
        ok = rule_binary(in, &want, err);
        want.dtype = RT_BOOL;
    } else if (op == RT_OP_WHERE) {
        ok = rule_where(in, &want, err);
    } else if (op == RT_OP_DROPOUT) {
        ok = rule_dropout(in, &want, err);
    } else if (is_binary(op)) {
        ok = (op != RT_OP_GELU_GRAD && op != RT_OP_SILU_GRAD) ||
             need_float(x, "x", err);
        ok = ok && rule_binary(in, &want, err);
    } else if (is_unary(op)) {
        want = *x;
        ok = op == RT_OP_NEG || op == RT_OP_ABS || op == RT_OP_RELU ||
             need_float(x, "the operand", err);
    } else {
        switch (op) {
        case RT_OP_CAST:
            want = *x;
            want.dtype = out->dtype;
            ok = true;
            break;
        case RT_OP_COPY:
            if (out->dtype != x->dtype || rt_type_numel(out) != rt_type_numel(x))
                return rt_plan_fail(err, "copies %s to %s; a copy keeps the dtype and the "
                                    "element count", rt_type_text(b1, x), rt_type_text(b2, out));
            return true;
        case RT_OP_MATMUL:
            ok = rule_matmul(in, &want, err);
            break;
        case RT_OP_SPLIT3:
            if (x->dtype != RT_F32 || in->dim < 0 || in->dim >= x->rank || in->dim2 < 0 ||
                in->dim2 > 1)
                return rt_plan_fail(err, "splits %s along dim %lld (order %lld): it splits "
                                    "f32 along one of its dims, in order 0 or 1",
                                    rt_type_text(b1, x), (long long)in->dim,
                                    (long long)in->dim2);
            want = *x;
            want.dtype = RT_BF16;
            want.dim[in->dim] *= 3;
            ok = true;
            break;
        case RT_OP_ATTENTION:
            ok = rule_attention(in, &want, err);
            break;
        case RT_OP_SUM:
        case RT_OP_MEAN:
        case RT_OP_AMAX:
            ok = rule_reduce(in, &want, err);
            break;
        case RT_OP_SOFTMAX:
            want = *x;
            ok = need_float(x, "the operand", err) && check_axis(in, err);
            break;
        case RT_OP_LAYERNORM:
        case RT_OP_RMSNORM:
            ok = rule_norm(in, &want, err);
            break;
        case RT_OP_LAYERNORM_DX:
        case RT_OP_RMSNORM_DX:
            ok = rule_norm_dx(in, &want, err);
            break;
        case RT_OP_LAYERNORM_RSTD:
        case RT_OP_RMSNORM_RSTD:
            ok = rule_norm_rstd(in, &want, err);
            break;
        case RT_OP_TRANSPOSE:
            ok = rule_transpose(in, &want, err);
            break;
        case RT_OP_EMBEDDING:
            ok = rule_embedding(in, &want, err);
            break;
        case RT_OP_MSE:
            ok = rule_mse(in, &want, err);
            break;
        case RT_OP_XENT:
            ok = rule_xent(in, &want, err);
            break;
        case RT_OP_EXPAND:
            ok = rule_expand(in, &want, err);
            break;
        case RT_OP_ATTN_PROBS:
            ok = rule_attn_probs(in, &want, err);
            break;
        case RT_OP_ATTN_LSE: /* attn_probs' rule, the last dim dropped */
            ok = rule_attn_probs(in, &want, err);
            want.dtype = RT_F32;
            want.rank--;
            break;
        case RT_OP_ATTN_DELTA:
            ok = rule_attn_delta(in, &want, err);
            break;
        case RT_OP_ATTN_STATS:
        case RT_OP_ATTN_DQ:
        case RT_OP_ATTN_DK:
        case RT_OP_ATTN_DV:
            ok = rule_attn_grad(in, &want, err);
            break;
        case RT_OP_EMBEDDING_GRAD:
            ok = rule_embedding_grad(in, &want, err);
            break;
        case RT_OP_XENT_GRAD:
            ok = rule_xent(in, &want, err) && (in->nin < 3 || rule_xent_lse_operand(in, err));
            want = *x;
            break;
        case RT_OP_XENT_LSE:
            ok = rule_xent_lse(&in->in_t[0], &want, err);
            break;
        case RT_OP_MOMENTUM:
        case RT_OP_SGD:
        case RT_OP_ADAM_M:
        case RT_OP_ADAM_V:
        case RT_OP_ADAMW:
            ok = rule_optim(in, &want, err);
            break;
        case RT_OP_INSERT:
            want = *x;
            ok = rule_bucket(x, &in->in_t[1], in->offset, "the value", err);
            break;
        case RT_OP_EXTRACT:
            want = *out;
            ok = rule_bucket(x, out, in->offset, "the result", err);
            break;
        case RT_OP_NARROW:
            if (in->dim < 0 || in->dim >= x->rank || out->rank != x->rank || in->offset < 0 ||
                in->offset > x->dim[in->dim] - out->dim[in->dim])
                return rt_plan_fail(err, "narrow of %s at dim %lld, offset %lld to %s is out of "
                                    "range", rt_type_text(b1, x), (long long)in->dim,
                                    (long long)in->offset, rt_type_text(b2, out));
            want = *x;
            want.dim[in->dim] = out->dim[in->dim];
            ok = true;
            break;
        case RT_OP_CONCAT:
            if (in->dim < 0 || in->dim >= x->rank)
                return rt_plan_fail(err, "concat of %s along dim %lld", rt_type_text(b1, x),
                                    (long long)in->dim);
            want = *x;
            for (int i = 1; i < in->nin; i++) {
                const rt_type *y = &in->in_t[i];
                bool same = y->dtype == x->dtype && y->rank == x->rank;
                for (int d = 0; same && d < x->rank; d++)
                    same = d == in->dim || y->dim[d] == x->dim[d];
                if (!same)
                    return rt_plan_fail(err, "concat along dim %lld of %s and %s",
                                        (long long)in->dim, rt_type_text(b1, x),
                                        rt_type_text(b2, y));
                if (__builtin_add_overflow(want.dim[in->dim], y->dim[in->dim],
                                           &want.dim[in->dim]))
                    return rt_plan_fail(err, "concat makes too many elements");
            }
            ok = true;
            break;
        case RT_OP_IOTA:
            if (out->dtype != RT_I32 || out->rank != 1)
                return rt_plan_fail(err, "the result is %s; iota makes an i32 vector",
                                    rt_type_text(b1, out));
            return true;
        case RT_OP_CHECK_IDS:
        case RT_OP_CHECK_LABELS:
            if (in->dim < 1)
                return rt_plan_fail(err, "bound %lld is not 1 or more", (long long)in->dim);
            want = *x;
            ok = x->dtype == RT_I32 ||
                 rt_plan_fail(err, "checks i32 ids, got %s", rt_type_text(b1, x));
            break;
        case RT_OP_ALL_REDUCE:
            if (in->dim < 0 || in->dim >= RT_NREDUCE)
                return rt_plan_fail(err, "reduce operation %lld is unknown (0 sum, 1 max)",
                                    (long long)in->dim);
            ok = rule_group(p, in, &want, err);
            break;
        default: /* slice and the other collectives */
            ok = rule_group(p, in, &want, err);
            break;
        }
    }
    if (!ok)
        return false;
    if (!rt_type_eq(&want, out))
        return rt_plan_fail(err, "the result is %s, but the operands give %s", rt_type_text(b1, out),
                            rt_type_text(b2, &want));
    return true;
}
