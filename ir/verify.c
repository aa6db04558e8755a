/* verify.c: the module's invariants (DESIGN.md §2): the mesh and pipeline,
 * operand counts and attributes against the op table, SSA dominance, result
 * types against ir_infer, shardings, outputs and training. It runs after
 * every pass in debug builds, so its messages are for whoever wrote the pass:
 * they name the op by its index and opcode and the value as --emit ir does. */
#include "ir.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TYPE_LEN 256 /* longer than any type text (see infer.c) */
#define MSG_LEN 1024

typedef struct nameref {
    const char *name;
    int idx;            /* op or output index */
} nameref;

typedef struct vctx {
    const ir_module *m;
    /* By value id, the value once its op has been checked: an operand must
     * be exactly that value, which gives dominance and identity at once. */
    const ir_value **byid;  /* [m->next_id] */
    nameref *names;         /* scratch for the uniqueness checks */
    /* The failure; copied to err only after the scratch memory is freed,
     * so a jump out of su_buf on memory exhaustion cannot leak it. */
    char msg[MSG_LEN];
    int bad_op;             /* the op the failure is about, or -1 */
} vctx;

static bool fail(vctx *c, const char *fmt, ...) SU_PRINTF(2, 3);
static bool op_fail(vctx *c, int i, const ir_op *op, const char *fmt, ...) SU_PRINTF(4, 5);

static bool fail(vctx *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->msg, sizeof c->msg, fmt, ap);
    va_end(ap);
    return false;
}

/* "op 12 (matmul): " + the message. */
static bool op_fail(vctx *c, int i, const ir_op *op, const char *fmt, ...)
{
    c->bad_op = i;
    int k = snprintf(c->msg, sizeof c->msg, "op %d (%s): ", i, ir_ops[op->code].name);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->msg + k, sizeof c->msg - (size_t)k, fmt, ap);
    va_end(ap);
    return false;
}

static const char *tstr(char buf[TYPE_LEN], const ir_type *t)
{
    size_t k = (size_t)snprintf(buf, TYPE_LEN, "%s[", ir_dtype_name(t->dtype));
    for (int i = 0; i < t->rank && k < TYPE_LEN; i++)
        k += (size_t)snprintf(buf + k, TYPE_LEN - k, "%s%lld", i ? ", " : "", (long long)t->dim[i]);
    if (k < TYPE_LEN)
        snprintf(buf + k, TYPE_LEN - k, "]");
    return buf;
}

/* "%x" or "%12", as the printer names values (cut at 63 bytes). Made by
 * hand: the verifier names every value it checks, and snprintf's cost
 * there was a large part of a compile's. */
static const char *vname(char buf[64], const ir_value *v)
{
    size_t k = 0;
    buf[k++] = '%';
    if (v->name) {
        for (const char *s = v->name; *s && k < 63; s++)
            buf[k++] = *s;
    } else {
        char d[24];
        int n = 0;
        unsigned u = v->id < 0 ? 0u - (unsigned)v->id : (unsigned)v->id;
        do
            d[n++] = (char)('0' + u % 10);
        while ((u /= 10) && n < 23);
        if (v->id < 0)
            buf[k++] = '-';
        while (n)
            buf[k++] = d[--n];
    }
    buf[k] = 0;
    return buf;
}

static bool defined(const vctx *c, const ir_value *v)
{
    return v && v->id >= 0 && v->id < c->m->next_id && c->byid[v->id] == v;
}

static bool verify_mesh(vctx *c)
{
    const ir_mesh *me = &c->m->mesh;
    if (me->naxes < 0 || me->naxes > IR_MAX_AXES)
        return fail(c, "mesh has %d axes; 0 to %d are supported", me->naxes, IR_MAX_AXES);
    int64_t ranks = 1;
    for (int i = 0; i < me->naxes; i++) {
        if (!me->name[i])
            return fail(c, "mesh axis %d has no name", i);
        for (int j = 0; j < i; j++)
            if (!strcmp(me->name[i], me->name[j]))
                return fail(c, "mesh axis name %s is used twice", me->name[i]);
        if (me->size[i] < 1)
            return fail(c, "mesh axis %s has size %lld; sizes are 1 or more", me->name[i],
                        (long long)me->size[i]);
        /* Bounding the whole product bounds every split product too. */
        if (!su_mul64(ranks, me->size[i], &ranks))
            return fail(c, "mesh has too many ranks");
    }
    return true;
}

static bool verify_pipeline(vctx *c)
{
    const ir_pipeline *p = &c->m->pipe;
    const ir_mesh *me = &c->m->mesh;
    if (p->axis == -1 && c->m->stage >= 0)
        return fail(c, "stage %d of a module without a pipeline", c->m->stage);
    if (p->axis == -1)
        return true;
    if (p->axis < 0 || p->axis >= me->naxes)
        return fail(c, "pipeline axis %d is not a mesh axis", p->axis);
    if (p->repeats < 1 || p->microbatches < 1 || p->chunks < 1)
        return fail(c, "pipeline needs repeats, microbatches and chunks of 1 or more, "
                    "got %d, %d and %d",
                    p->repeats, p->microbatches, p->chunks);
    if ((int)p->schedule < 0 || (int)p->schedule > IR_SCHED_INTERLEAVED)
        return fail(c, "pipeline schedule %d is unknown", (int)p->schedule);
    if (p->chunks != 1 && p->schedule != IR_SCHED_INTERLEAVED)
        return fail(c, "pipeline has %d chunks per stage, but only the interleaved "
                    "schedule has more than 1",
                    p->chunks);
    if (c->m->stage >= 0 && (!c->m->partitioned || c->m->stage >= me->size[p->axis]))
        return fail(c, "stage %d is not a stage of a partitioned module's %lld", c->m->stage,
                    (long long)me->size[p->axis]);
    int64_t parts;
    if (!su_mul64(me->size[p->axis], p->chunks, &parts) || p->repeats < parts)
        return fail(c, "pipeline of %d repetitions cannot fill %lld stages of %s with %d "
                    "chunks each (one each at least)",
                    p->repeats, (long long)me->size[p->axis], me->name[p->axis], p->chunks);
    return true;
}

/* Code, operand and result counts against the op table. */
static bool verify_arity(vctx *c, int i, const ir_op *op)
{
    if ((int)op->code < 0 || (int)op->code >= IR_NOPS)
        return fail(c, "op %d: unknown opcode %d", i, (int)op->code);
    const ir_opinfo *info = &ir_ops[op->code];
    if (op->nin < info->min_in || op->nin > info->max_in)
        return op_fail(c, i, op, "has %d operands; the op takes %d to %d", op->nin,
                       info->min_in, info->max_in);
    if (op->nres != info->nres)
        return op_fail(c, i, op, "has %d results; the op makes %d", op->nres, info->nres);
    if ((op->nin && !op->in) || (op->nres && !op->res))
        return op_fail(c, i, op, "has no operand or result array");
    return true;
}

/* Operands are values defined by earlier ops; results point back to the
 * op and take fresh ids. */
static bool verify_values(vctx *c, int i, const ir_op *op)
{
    char vn[64];
    for (int j = 0; j < op->nin; j++) {
        if (!op->in[j])
            return op_fail(c, i, op, "operand %d is missing", j + 1);
        if (!defined(c, op->in[j]))
            return op_fail(c, i, op, "operand %d (%s) is not defined by an earlier op", j + 1,
                           vname(vn, op->in[j]));
    }
    for (int r = 0; r < op->nres; r++) {
        const ir_value *v = op->res[r];
        if (!v)
            return op_fail(c, i, op, "result %d is missing", r);
        if (v->def != op || v->res != r)
            return op_fail(c, i, op, "result %d (%s) does not point back to its op", r,
                           vname(vn, v));
        if (v->id < 0 || v->id >= c->m->next_id)
            return op_fail(c, i, op, "result %d has id %d, outside 0..%d", r, v->id,
                           c->m->next_id - 1);
        if (c->byid[v->id])
            return op_fail(c, i, op, "result %d (%s) reuses value id %d", r, vname(vn, v),
                           v->id);
        c->byid[v->id] = v;
    }
    return true;
}

/* A type the IR can hold, checked before anything prints or multiplies it. */
static bool verify_type(vctx *c, int i, const ir_op *op, const ir_value *v)
{
    const ir_type *t = &v->type;
    char vn[64], tb[TYPE_LEN];
    vname(vn, v);
    if ((int)t->dtype < 0 || (int)t->dtype >= IR_NDTYPES)
        return op_fail(c, i, op, "%s has unknown dtype %d", vn, (int)t->dtype);
    if (t->rank < 0 || t->rank > IR_MAX_RANK)
        return op_fail(c, i, op, "%s has rank %d; at most %d dimensions are supported", vn,
                       t->rank, IR_MAX_RANK);
    int64_t n = 1;
    for (int d = 0; d < t->rank; d++) {
        if (t->dim[d] < 1)
            return op_fail(c, i, op, "%s has a dimension of size %lld: %s", vn,
                           (long long)t->dim[d], tstr(tb, t));
        if (!su_mul64(n, t->dim[d], &n))
            return op_fail(c, i, op, "%s has too many elements: %s", vn, tstr(tb, t));
    }
    return true;
}

/* Names and initializers of sources; constants are scalars. */
static bool verify_source(vctx *c, int i, const ir_op *op)
{
    const ir_attrs *a = op->a;
    char tb[TYPE_LEN];
    if (op->code == IR_CONST && op->res[0]->type.rank != 0)
        return op_fail(c, i, op, "type %s is not a scalar", tstr(tb, &op->res[0]->type));
    if (op->code == IR_CONST)
        return true;
    if (!a->name || !a->name[0])
        return op_fail(c, i, op, "has no name");
    if (a->init.kind != IR_INIT_PARAM && a->init_param)
        return op_fail(c, i, op, "names param \"%s\" without init param", a->init_param);
    switch (a->init.kind) {
    case IR_INIT_NONE:
    case IR_INIT_ZEROS:
    case IR_INIT_ONES:
        return true;
    case IR_INIT_NORMAL:
        if (!(a->init.a > 0))
            return op_fail(c, i, op, "init normal(%g) needs a std > 0", a->init.a);
        if (!ir_dtype_is_float(op->res[0]->type.dtype))
            return op_fail(c, i, op, "init normal needs a floating-point type, not %s",
                           ir_dtype_name(op->res[0]->type.dtype));
        return true;
    case IR_INIT_UNIFORM:
        if (!(a->init.a < a->init.b))
            return op_fail(c, i, op, "init uniform(%g, %g) needs low < high", a->init.a,
                           a->init.b);
        /* integers in [low, high): whole bounds, within i32 */
        if (!ir_dtype_is_float(op->res[0]->type.dtype) &&
            (a->init.a != floor(a->init.a) || a->init.b != floor(a->init.b) ||
             a->init.a < INT32_MIN || a->init.b > (double)INT32_MAX + 1))
            return op_fail(c, i, op, "init uniform(%g, %g) of %s needs whole bounds within i32",
                           a->init.a, a->init.b, ir_dtype_name(op->res[0]->type.dtype));
        return true;
    case IR_INIT_PARAM: /* the param itself is checked once every name is known */
        if (op->code != IR_STATE)
            return op_fail(c, i, op, "only a state can be made from a param");
        if (!a->init_param || !a->init_param[0])
            return op_fail(c, i, op, "init param names no param");
        if (!ir_dtype_is_float(op->res[0]->type.dtype))
            return op_fail(c, i, op, "init param(\"%s\") needs a floating-point state, not %s",
                           a->init_param, ir_dtype_name(op->res[0]->type.dtype));
        return true;
    }
    return op_fail(c, i, op, "init kind %d is unknown", (int)a->init.kind);
}

/* Reruns ir_infer on a copy of the attributes: the stored result type must
 * be the inferred one, and the attributes infer normalises (axis, a reshape's
 * -1) must already be normalised, or printing and reparsing would differ. */
static bool verify_inferred(vctx *c, int i, const ir_op *op)
{
    const ir_type *types[8]; /* max_in of every op is below 8 */
    ir_attrs a = *op->a;
    ir_type want;
    char why[512], t1[TYPE_LEN], t2[TYPE_LEN];
    for (int j = 0; j < op->nin; j++)
        types[j] = &op->in[j]->type;
    if (!ir_infer(&c->m->mesh, op->code, types, op->nin, &a, &want, why, sizeof why))
        return op_fail(c, i, op, "%s", why);
    if (!ir_type_eq(&want, &op->res[0]->type))
        return op_fail(c, i, op, "result type %s differs from the inferred %s",
                       tstr(t1, &op->res[0]->type), tstr(t2, &want));
    unsigned attrs = ir_ops[op->code].attrs;
    if ((attrs & IR_A_AXIS) && a.axis != op->a->axis)
        return op_fail(c, i, op, "axis %lld is not normalised (should be %lld)",
                       (long long)op->a->axis, (long long)a.axis);
    if (attrs & IR_A_SHAPE)
        for (int d = 0; d < a.nlist; d++)
            if (a.list[d] != op->a->list[d])
                return op_fail(c, i, op, "shape entry %d is %lld, not normalised to %lld", d,
                               (long long)op->a->list[d], (long long)a.list[d]);
    return true;
}

/* "tp" or "(dp, tp)": the axes splitting dim d. */
static const char *axes_str(char buf[TYPE_LEN], const ir_sharding *s, const ir_mesh *me, int d)
{
    size_t k = (size_t)snprintf(buf, TYPE_LEN, "%s", s->naxes[d] > 1 ? "(" : "");
    for (int j = 0; j < s->naxes[d] && k < TYPE_LEN; j++)
        k += (size_t)snprintf(buf + k, TYPE_LEN - k, "%s%s", j ? ", " : "",
                              me->name[s->axes[d][j]]);
    if (k < TYPE_LEN && s->naxes[d] > 1)
        snprintf(buf + k, TYPE_LEN - k, ")");
    return buf;
}

/* Valid axes, each used once per value; global dims divide by their split. */
static bool verify_sharding(vctx *c, int i, const ir_op *op, const ir_value *v)
{
    const ir_sharding *s = &v->sh;
    const ir_mesh *me = &c->m->mesh;
    char vn[64], ab[TYPE_LEN];
    vname(vn, v);
    if (s->kind == IR_SH_NONE)
        return true;
    if (s->kind > IR_SH_AUTO)
        return op_fail(c, i, op, "sharding of %s has unknown kind %d", vn, s->kind);
    unsigned used = 0;
    for (int d = 0; d < v->type.rank; d++) {
        if (s->naxes[d] > IR_MAX_AXES)
            return op_fail(c, i, op, "sharding of %s splits dimension %d over %d axes", vn, d,
                           s->naxes[d]);
        for (int j = 0; j < s->naxes[d]; j++) {
            int ax = s->axes[d][j];
            if (ax >= me->naxes)
                return op_fail(c, i, op, "sharding of %s names mesh axis %d, but the mesh has %d",
                               vn, ax, me->naxes);
            if (used & (1u << ax))
                return op_fail(c, i, op, "sharding of %s uses mesh axis %s twice", vn,
                               me->name[ax]);
            used |= 1u << ax;
        }
    }
    if (s->partial >> me->naxes)
        return op_fail(c, i, op, "sharding of %s is partial over a mesh axis the mesh lacks", vn);
    for (int ax = 0; ax < me->naxes; ax++)
        if (s->partial & used & (1u << ax))
            return op_fail(c, i, op, "sharding of %s both splits over %s and is partial over it",
                           vn, me->name[ax]);
    for (int d = 0; d < v->type.rank && !c->m->partitioned; d++) {
        int64_t split = ir_sharding_split(s, me, d);
        if (v->type.dim[d] % split)
            return op_fail(c, i, op, "dimension %d of %s has size %lld, which does not divide "
                           "evenly over %s (split %lld)",
                           d, vn, (long long)v->type.dim[d], axes_str(ab, s, me, d),
                           (long long)split);
    }
    return true;
}

static bool verify_rep(vctx *c, int i, const ir_op *op)
{
    const ir_pipeline *p = &c->m->pipe;
    if (op->rep == -1)
        return true;
    if (p->axis < 0)
        return op_fail(c, i, op, "rep %d in a module without a pipeline", op->rep);
    if (op->rep < 0 || op->rep >= p->repeats)
        return op_fail(c, i, op, "rep %d is outside the pipeline's repetitions 0..%d", op->rep,
                       p->repeats - 1);
    return true;
}

/* send and recv: only in one stage's program, with another stage as peer;
 * their types are given, not inferred. */
static bool verify_p2p(vctx *c, int i, const ir_op *op)
{
    const ir_module *m = c->m;
    if (op->code == IR_INSTANCES)
        return m->shared && op->a->tag >= 0 && op->a->tag < m->shared->nruns
                   ? true
                   : op_fail(c, i, op, "instances appear only in a stage whose middle "
                             "microbatches are held once, between the pipeline split and "
                             "the verifier");
    if (m->stage < 0)
        return op_fail(c, i, op, "send and recv appear only in a stage's program");
    if (op->a->peer < 0 || op->a->peer >= m->mesh.size[m->pipe.axis] || op->a->peer == m->stage)
        return op_fail(c, i, op, "peer %lld is not another stage of axis %s (size %lld)",
                       (long long)op->a->peer, m->mesh.name[m->pipe.axis],
                       (long long)m->mesh.size[m->pipe.axis]);
    return true;
}

static bool verify_op(vctx *c, int i, const ir_op *op)
{
    if (op->phase >= IR_NPHASES)
        return op_fail(c, i, op, "phase %d is unknown", op->phase);
    if (op->code >= 0 && op->code < IR_NOPS && !c->m->partitioned &&
        (ir_ops[op->code].cls == IR_C_COMM || op->code == IR_SLICE ||
         op->code == IR_INSERT || op->code == IR_EXTRACT))
        return op_fail(c, i, op, "collectives, slices and buckets appear only in a "
                       "partitioned module");
    if (!c->m->partitioned && (op->code == IR_CHECK_IDS || op->code == IR_CHECK_LABELS))
        return op_fail(c, i, op, "checks of ids appear only in a partitioned module");
    if (!c->m->partitioned && (op->code == IR_ATTN_STATS || op->code == IR_ATTN_DQ ||
                               op->code == IR_ATTN_DK || op->code == IR_ATTN_DV ||
                               op->code == IR_ATTN_LSE || op->code == IR_ATTN_DELTA ||
                               op->code == IR_LAYERNORM_DX || op->code == IR_RMSNORM_DX ||
                               op->code == IR_LAYERNORM_RSTD || op->code == IR_RMSNORM_RSTD ||
                               op->code == IR_XENT_LSE ||
                               (op->code == IR_XENT_GRAD && op->nin == 3) ||
                               op->code == IR_SPLIT3 || op->a->parts))
        return op_fail(c, i, op, "%s appears only in a partitioned module",
                       ir_ops[op->code].name);
    if (!c->m->partitioned && (op->code == IR_ATTENTION || op->code == IR_ATTN_PROBS) &&
        op->nin == ir_ops[op->code].max_in)
        return op_fail(c, i, op, "query positions appear only in a partitioned module");
    if (!verify_arity(c, i, op) || !verify_values(c, i, op) || !verify_rep(c, i, op))
        return false;
    if (!c->m->partitioned && ir_attn_group(op) > 1)
        return op_fail(c, i, op, "attention with fewer key and value heads than query heads "
                       "appears only in a partitioned module (passes/fold.c makes it)");
    if (op->a->reduce >= IR_NREDUCE ||
        (op->a->reduce != IR_RED_SUM && !(ir_ops[op->code].attrs & IR_A_REDUCE)))
        return op_fail(c, i, op, "reduce %d is not an operation of %s", op->a->reduce,
                       ir_ops[op->code].name);
    for (int r = 0; r < op->nres; r++)
        if (!verify_type(c, i, op, op->res[r]))
            return false;
    ir_opclass cls = ir_ops[op->code].cls;
    bool ok = cls == IR_C_SOURCE ? verify_source(c, i, op)
              : cls == IR_C_P2P  ? verify_p2p(c, i, op)
                                 : verify_inferred(c, i, op);
    for (int r = 0; ok && r < op->nres; r++)
        ok = verify_sharding(c, i, op, op->res[r]);
    return ok;
}

static int cmp_nameref(const void *x, const void *y)
{
    const nameref *a = x, *b = y;
    int k = strcmp(a->name, b->name);
    return k ? k : (a->idx > b->idx) - (a->idx < b->idx);
}

/* Sorts n names; the index of the later of the first duplicate pair found,
 * or -1. Sorting keeps this n log n on modules with many params. */
static int find_duplicate(nameref *names, int n, int *earlier)
{
    qsort(names, (size_t)n, sizeof *names, cmp_nameref);
    for (int k = 1; k < n; k++)
        if (!strcmp(names[k - 1].name, names[k].name)) {
            *earlier = names[k - 1].idx;
            return names[k].idx;
        }
    return -1;
}

static ir_type global_type(const ir_module *m, const ir_value *v);

/* A state made from a param (init param("NAME")): NAME is a param of the
 * module, of the state's global shape. names: every source's, sorted. */
static bool verify_init_param(vctx *c, int i, const ir_op *op, const nameref *names, int n)
{
    const char *want = op->a->init_param;
    int lo = 0, hi = n;
    while (lo < hi) { /* the first name >= want */
        int mid = lo + (hi - lo) / 2;
        if (strcmp(names[mid].name, want) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    const ir_op *src = lo < n && !strcmp(names[lo].name, want) ? IR_OP(c->m, names[lo].idx) : NULL;
    if (!src || src->code != IR_PARAM)
        return op_fail(c, i, op, "init param(\"%s\"): the module has no param called \"%s\"",
                       want, want);
    ir_type a = global_type(c->m, op->res[0]), b = global_type(c->m, src->res[0]), same = a;
    same.dtype = b.dtype; /* the state converts the param's values */
    char t1[TYPE_LEN], t2[TYPE_LEN];
    if (!ir_type_eq(&same, &b))
        return op_fail(c, i, op, "init param(\"%s\"): the state's shape %s differs from the "
                       "param's %s", want, tstr(t1, &a), tstr(t2, &b));
    return true;
}

static bool verify_ops(vctx *c)
{
    const ir_module *m = c->m;
    int n = 0, earlier;
    for (int i = 0; i < m->ops.n; i++) {
        const ir_op *op = IR_OP(m, i);
        if (!op)
            return fail(c, "op %d is missing", i);
        if (!verify_op(c, i, op))
            return false;
        if (op->code == IR_INPUT || op->code == IR_PARAM || op->code == IR_STATE)
            c->names[n++] = (nameref){op->a->name, i};
    }
    int later = find_duplicate(c->names, n, &earlier);
    if (later >= 0)
        return op_fail(c, later, IR_OP(m, later), "name \"%s\" is already used by op %d",
                       IR_OP(m, later)->a->name, earlier);
    for (int i = 0; i < m->ops.n; i++) {
        const ir_op *op = IR_OP(m, i);
        if (op->code == IR_STATE && op->a->init.kind == IR_INIT_PARAM &&
            !verify_init_param(c, i, op, c->names, n))
            return false;
    }
    return true;
}

static bool verify_outputs(vctx *c)
{
    const ir_module *m = c->m;
    char vn[64];
    int earlier;
    for (int i = 0; i < m->outputs.n; i++) {
        const ir_output *o = IR_OUTPUT(m, i);
        if (!o || !o->name || !o->name[0])
            return fail(c, "output %d has no name", i);
        if (!o->v)
            return fail(c, "output \"%s\" has no value", o->name);
        if (!defined(c, o->v))
            return fail(c, "output \"%s\" is %s, which no op of the module defines", o->name,
                        vname(vn, o->v));
        c->names[i] = (nameref){o->name, i};
    }
    int later = find_duplicate(c->names, m->outputs.n, &earlier);
    if (later >= 0)
        return fail(c, "output name \"%s\" is used twice (outputs %d and %d)",
                    IR_OUTPUT(m, later)->name, earlier, later);
    return true;
}

/* v's type before partitioning: its local type times the splits. */
static ir_type global_type(const ir_module *m, const ir_value *v)
{
    ir_type t = v->type;
    if (!m->partitioned || v->sh.kind == IR_SH_NONE)
        return t;
    for (int d = 0; d < t.rank; d++)
        t.dim[d] *= ir_sharding_split(&v->sh, &m->mesh, d);
    return t;
}

/* Each update gives a param or state a value of its own type (and, once
 * partitioned, its own sharding), at most once; only in a training step. */
static bool verify_updates(vctx *c)
{
    const ir_module *m = c->m;
    char vn[64], v2[64], t1[TYPE_LEN], t2[TYPE_LEN];
    if (m->updates.n && !m->train.loss && (m->stage < 0 || m->train.opt == IR_OPT_NONE))
        return fail(c, "updates in a module without train"); /* a stage may lack the loss */
    for (int i = 0; i < m->updates.n; i++) {
        const ir_update *u = IR_UPDATE(m, i);
        if (!u || !u->src || !u->v)
            return fail(c, "update %d is incomplete", i);
        vname(vn, u->src);
        vname(v2, u->v);
        if (!defined(c, u->src) || !defined(c, u->v))
            return fail(c, "update %s = %s names a value no op of the module defines", vn, v2);
        if (u->src->def->code != IR_PARAM && u->src->def->code != IR_STATE)
            return fail(c, "update %s: only a param or a state can be updated, not the result "
                        "of %s", vn, ir_ops[u->src->def->code].name);
        if (!ir_type_eq(&u->src->type, &u->v->type))
            return fail(c, "update %s = %s: the new value's type %s differs from %s", vn, v2,
                        tstr(t1, &u->v->type), tstr(t2, &u->src->type));
        ir_sharding a = u->src->sh, b = u->v->sh;
        a.kind = b.kind = IR_SH_AUTO; /* an annotation or not: the layout counts */
        if (m->partitioned && !ir_sharding_eq(&a, &b, u->src->type.rank))
            return fail(c, "update %s = %s: the new value's sharding differs from the old one's",
                        vn, v2);
        for (int j = 0; j < i; j++)
            if (IR_UPDATE(m, j)->src == u->src)
                return fail(c, "%s is updated twice (updates %d and %d)", vn, j, i);
        if (!u->grad)
            continue;
        vname(v2, u->grad);
        if (!defined(c, u->grad))
            return fail(c, "update %s: its gradient %s is defined by no op of the module", vn, v2);
        if (u->src->def->code != IR_PARAM)
            return fail(c, "update %s: only a param has a gradient", vn);
        /* the same global type: the gradient's layout may differ (ZeRO-2) */
        ir_type gs = global_type(m, u->src), gg = global_type(m, u->grad);
        if (!ir_type_eq(&gs, &gg))
            return fail(c, "update %s: its gradient %s has type %s, not %s", vn, v2,
                        tstr(t1, &gg), tstr(t2, &gs));
    }
    return true;
}

static bool verify_train(vctx *c)
{
    const ir_train *t = &c->m->train;
    char vn[64], tb[TYPE_LEN];
    if (!t->loss && c->m->stage >= 0) /* the loss is on the last stage */
        return true;
    if (!t->loss)
        return t->opt == IR_OPT_NONE || fail(c, "train has an optimizer but no loss");
    vname(vn, t->loss);
    if (!defined(c, t->loss))
        return fail(c, "train loss %s is not defined by any op of the module", vn);
    if (t->loss->type.rank != 0 || !ir_dtype_is_float(t->loss->type.dtype))
        return fail(c, "train loss %s must be a floating-point scalar, got %s", vn,
                    tstr(tb, &t->loss->type));
    if (t->opt != IR_OPT_SGD && t->opt != IR_OPT_ADAMW)
        return fail(c, "train optimizer %d is not sgd or adamw", (int)t->opt);
    if (!(t->lr > 0))
        return fail(c, "train learning rate must be > 0, got %g", t->lr);
    if (t->zero < 0 || t->zero > 3)
        return fail(c, "train zero stage %d is not 0 to 3", t->zero);
    if (t->zero > 0 && (t->zero_axis < 0 || t->zero_axis >= c->m->mesh.naxes))
        return fail(c, "train zero %d names mesh axis %d, which the mesh lacks", t->zero,
                    t->zero_axis);
    if (t->zero == 0 && t->zero_axis != -1)
        return fail(c, "train zero axis is %d without zero (should be -1)", t->zero_axis);
    if (t->clip < 0)
        return fail(c, "train clip must be >= 0 (0: none), got %g", t->clip);
    if (t->warmup < 0 || t->warmup != floor(t->warmup) || t->steps < 0 ||
        t->steps != floor(t->steps) || t->min_lr < 0)
        return fail(c, "train schedule: warmup %g and steps %g must be counts, min_lr %g >= 0",
                    t->warmup, t->steps, t->min_lr);
    if (t->decay != IR_DECAY_NONE && !(t->steps > t->warmup))
        return fail(c, "train schedule: a decay needs steps %g past the warmup %g", t->steps,
                    t->warmup);
    return true;
}

bool ir_verify(const ir_module *m, su_buf *err)
{
    return ir_verify_at(m, err, NULL);
}

bool ir_verify_at(const ir_module *m, su_buf *err, int *bad_op)
{
    vctx c = {.m = m, .bad_op = -1};
    if (bad_op)
        *bad_op = -1;
    if (m->next_id < 0 || m->ops.n < 0 || m->outputs.n < 0) {
        su_buf_puts(err, "module has negative counts");
        return false;
    }
    size_t nnames = (size_t)(m->ops.n > m->outputs.n ? m->ops.n : m->outputs.n);
    c.byid = calloc(m->next_id ? (size_t)m->next_id : 1, sizeof *c.byid);
    c.names = malloc((nnames ? nnames : 1) * sizeof *c.names);
    if (!c.byid || !c.names) {
        free(c.byid);
        free(c.names);
        su_oom(m->oom);
    }
    bool ok = verify_mesh(&c) && verify_pipeline(&c) && verify_ops(&c) && verify_outputs(&c) &&
              verify_updates(&c) && verify_train(&c);
    free(c.byid);
    free(c.names);
    if (!ok)
        su_buf_puts(err, c.msg);
    if (!ok && bad_op)
        *bad_op = c.bad_op;
    return ok;
}
