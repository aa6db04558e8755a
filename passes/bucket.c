/* bucket.c: gradient buckets (DESIGN.md §3.6). In a partitioned training
 * step, the collectives that synchronise gradients (an all_reduce, or a
 * reduce_scatter under ZeRO-2 and 3, whose result is a param's gradient as
 * the optimizer reads it) are many and mostly small; each costs a launch
 * and a latency. They are grouped, in program order, into buckets of at
 * most max_bytes: one collective per bucket, issued as soon as its last
 * gradient is complete.
 *
 * A bucket is a [R, M] buffer (ops.def's insert and extract). For an
 * all_reduce R = 1 and the gradients lie one after another. For a
 * reduce_scatter over a group of R ranks, along a dim with only size-1
 * dims before it, each gradient viewed as [R, n/R] puts its r-th block in
 * row r, so that one reduce_scatter of the bucket over dim 0 leaves rank r
 * the reduced r-th block of every gradient, as the separate ones did. Each
 * gradient is inserted where its collective was (its unreduced value then
 * dies), and extracted after the bucket's collective into the value the
 * optimizer reads, which keeps its name and sharding. The zeroed bucket
 * comes just before the op that computes its first gradient, so that every
 * gradient can be computed in its place in the bucket (memplan.c: views).
 *
 * A gradient joins the open bucket of its kind, axes and dtype unless the
 * bucket would grow past max_bytes or a gradient already in it is read
 * before this point (its collective must come first); the bucket is then
 * closed and a new one opened. A bucket of one gradient stays a plain
 * collective. Bytes sent are unchanged: the same elements, in fewer
 * collectives.
 *
 * Under ZeRO-1 (`zero 1`) the gradients are kept whole through the
 * backward: each gradient's reduce_scatter over the zero axis, bucketed or
 * alone, is issued at the end of the backward (before the first optimizer
 * op after the last backward op: a pipeline stage's program may update its
 * layers' params before the backward of the ops outside its repeat), so
 * the unreduced gradients all live until then, as ZeRO-1's memory is,
 * while the bytes sent are ZeRO-2's. A gradient read before that end (by
 * an earlier optimizer op) keeps its collective where it was. */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

typedef struct bucket {
    const ir_op *key;    /* the first member: kind, axes, dtype */
    int64_t rows, cols;  /* R, M */
    int64_t first_use;   /* the earliest read of a member's result */
    su_vec members;      /* ir_op * */
} bucket;

enum { MAXOPEN = 16 };

typedef struct bctx {
    ir_module *m;
    int64_t max_bytes;
    su_arena ar;         /* the pass's scratch */
    int n0;              /* the ops before the pass */
    bucket open[MAXOPEN];
    int nopen;
    su_vec ops;          /* the new order */
    int64_t *first_use;  /* per value id */
    su_vec *before;      /* per original op index: ops emitted in its place */
    su_vec *after;       /* per original op index: ops emitted after it */
    bool *drop;          /* per original op index: the op is replaced */
    int *pos;            /* per value id: the original index of its op */
    int defer_to;        /* zero 1: the index of the first optimizer op after
                          * the backward (where the zero axis's
                          * reduce_scatters go); -1 otherwise */
    char err[256];
} bctx;

static int64_t group_size(const ir_module *m, const ir_op *op)
{
    int64_t n = 1;
    for (int i = 0; i < op->a->naxes; i++)
        n *= m->mesh.size[op->a->axes[i]];
    return n;
}

/* Whether op synchronises a gradient in a way a bucket can hold. */
static bool candidate(const bctx *B, const ir_op *op, const bool *is_grad)
{
    if (op->phase != IR_PH_BACKWARD || op->nres != 1 || !is_grad[op->res[0]->id])
        return false;
    if (op->code == IR_ALL_REDUCE)
        return true;
    if (op->code != IR_REDUCE_SCATTER)
        return false;
    const ir_type *t = &op->in[0]->type;
    for (int d = 0; d < op->a->dim; d++)
        if (t->dim[d] != 1)
            return false; /* its blocks are not contiguous */
    (void)B;
    return true;
}

static bool same_key(const ir_op *a, const ir_op *b)
{
    return a->code == b->code && a->in[0]->type.dtype == b->in[0]->type.dtype &&
           a->a->naxes == b->a->naxes && !memcmp(a->a->axes, b->a->axes, (size_t)a->a->naxes);
}

static ir_value *emit(bctx *B, const ir_op *like, ir_opcode code, ir_value **in, int nin,
                      ir_attrs *a)
{
    ir_value *v = ir_emit(B->m, code, in, nin, a, B->err, sizeof B->err);
    if (!v)
        su_unreachable(); /* the bucket's shapes are made to fit */
    v->def->phase = IR_PH_BACKWARD;
    v->def->loc = like->loc;
    v->def->rep = like->rep;
    return v;
}

/* A bucket value: replicated, partial over the collective's axes. */
static ir_sharding bucket_sharding(const ir_op *key)
{
    ir_sharding s;
    memset(&s, 0, sizeof s);
    s.kind = IR_SH_AUTO;
    for (int i = 0; i < key->a->naxes; i++)
        s.partial |= (uint16_t)(1u << key->a->axes[i]);
    return s;
}

/* Whether bucket k's collective goes to the end of the backward (zero 1):
 * a reduce_scatter over the zero axis that nothing reads before then. */
static bool deferred(const bctx *B, const bucket *k)
{
    const ir_op *key = k->key;
    return B->defer_to >= 0 && key->code == IR_REDUCE_SCATTER && key->a->naxes == 1 &&
           key->a->axes[0] == B->m->train.zero_axis && k->first_use >= B->defer_to;
}

/* Where ops that come after op index i go: after it, or for a deferred
 * bucket before the first optimizer op. */
static su_vec *place_after(bctx *B, const bucket *k, int i)
{
    if (!deferred(B, k))
        return &B->after[i];
    return B->defer_to < B->n0 ? &B->before[B->defer_to] : &B->after[B->n0 - 1];
}

/* Rewrites the members of bucket k into one collective. */
static void flush(bctx *B, bucket *k)
{
    int n = k->members.n;
    if (n == 0)
        return;
    if (n == 1) { /* a plain collective: moved to the end of the backward under zero 1 */
        ir_op *c = k->members.v[0];
        int at = B->pos[c->res[0]->id];
        if (deferred(B, k)) {
            B->drop[at] = true;
            su_vec_push(place_after(B, k, at), B->m->oom, c);
        }
        su_vec_free(&k->members);
        return;
    }
    ir_module *m = B->m;
    const ir_op *key = k->key;
    ir_dtype dt = key->in[0]->type.dtype;
    ir_sharding part = bucket_sharding(key);
    /* the zeroed bucket, before the first gradient is computed, so that the
     * memory plan can compute each gradient in its place in the bucket */
    const ir_op *first = k->members.v[0];
    int at = B->pos[first->in[0]->id];
    ir_attrs za = {.value = 0}, xa = {.nlist = 2, .list = {k->rows, k->cols}};
    ir_type st = {.dtype = dt};
    ir_op *zop = ir_append(m, IR_CONST, NULL, 0, &za, &st);
    zop->phase = IR_PH_BACKWARD;
    zop->loc = first->loc;
    zop->rep = first->rep;
    zop->res[0]->sh = part;
    su_vec_push(&B->before[at], m->oom, zop);
    ir_value *cur = emit(B, first, IR_EXPAND, &zop->res[0], 1, &xa);
    cur->sh = part;
    su_vec_push(&B->before[at], m->oom, cur->def);
    int64_t off = 0, *offs = su_alloc(&B->ar, (size_t)n * sizeof *offs);
    for (int j = 0; j < n; j++) {
        ir_op *c = k->members.v[j];
        ir_attrs ia = {.offset = off};
        ir_value *in[2] = {cur, c->in[0]};
        cur = emit(B, c, IR_INSERT, in, 2, &ia);
        cur->sh = part;
        su_vec_push(&B->before[B->pos[c->res[0]->id]], m->oom, cur->def);
        B->drop[B->pos[c->res[0]->id]] = true;
        offs[j] = off;
        off += ir_type_numel(&c->in[0]->type) / k->rows;
    }
    /* the collective and the extracts, after the last gradient (zero 1: at
     * the end of the backward) */
    const ir_op *last = k->members.v[n - 1];
    su_vec *after = place_after(B, k, B->pos[last->res[0]->id]);
    ir_attrs ca = *key->a;
    ca.dim = 0;
    ir_value *red = emit(B, last, key->code, &cur, 1, &ca);
    red->sh = part;
    red->sh.partial = 0;
    if (key->code == IR_REDUCE_SCATTER) {
        red->sh.naxes[0] = (uint8_t)key->a->naxes;
        memcpy(red->sh.axes[0], key->a->axes, (size_t)key->a->naxes);
    }
    su_vec_push(after, m->oom, red->def);
    for (int j = 0; j < n; j++) {
        ir_op *c = k->members.v[j];
        ir_value *r = c->res[0];
        ir_attrs ea = {.offset = offs[j], .nlist = r->type.rank};
        memcpy(ea.list, r->type.dim, sizeof ea.list);
        ir_value *e = emit(B, c, IR_EXTRACT, &red, 1, &ea);
        /* the original result, so every use and the update see it */
        ir_op *eop = e->def;
        eop->res[0] = r;
        r->def = eop;
        su_vec_push(after, m->oom, eop);
    }
    su_vec_free(&k->members);
}

static void bucket_run(void *arg)
{
    bctx *B = arg;
    ir_module *m = B->m;
    int n0 = B->n0, nv = m->next_id + 1;
    su_arena *ar = &B->ar;
    B->first_use = su_alloc(ar, (size_t)nv * sizeof *B->first_use);
    bool *is_grad = su_alloc(ar, (size_t)nv * sizeof *is_grad);
    B->before = su_alloc(ar, ((size_t)n0 + 1) * sizeof *B->before);
    B->after = su_alloc(ar, ((size_t)n0 + 1) * sizeof *B->after);
    B->drop = su_alloc(ar, ((size_t)n0 + 1) * sizeof *B->drop);
    for (int v = 0; v < nv; v++)
        B->first_use[v] = n0;
    for (int i = n0 - 1; i >= 0; i--) {
        const ir_op *op = IR_OP(m, i);
        for (int j = 0; j < op->nin; j++)
            B->first_use[op->in[j]->id] = i;
    }
    for (int i = 0; i < m->updates.n; i++)
        if (IR_UPDATE(m, i)->grad)
            is_grad[IR_UPDATE(m, i)->grad->id] = true;

    bucket *open = B->open;
    B->pos = su_alloc(ar, (size_t)nv * sizeof *B->pos);
    for (int i = 0; i < n0; i++)
        for (int j = 0; j < IR_OP(m, i)->nres; j++)
            B->pos[IR_OP(m, i)->res[j]->id] = i;
    B->defer_to = -1;
    if (m->train.zero == 1) { /* the first optimizer op after the last of the backward:
                               * a pipeline stage may update its layers' params
                               * before the backward of the ops outside them */
        int last_bw = -1;
        for (int i = 0; i < n0; i++)
            if (IR_OP(m, i)->phase == IR_PH_BACKWARD)
                last_bw = i;
        B->defer_to = n0;
        for (int i = last_bw + 1; i < n0 && B->defer_to == n0; i++)
            if (IR_OP(m, i)->phase == IR_PH_OPTIMIZER)
                B->defer_to = i;
    }
    for (int i = 0; i < n0; i++) {
        ir_op *op = IR_OP(m, i);
        if (!candidate(B, op, is_grad))
            continue;
        int64_t rows = op->code == IR_REDUCE_SCATTER ? group_size(m, op) : 1;
        int64_t cols = ir_type_numel(&op->in[0]->type) / rows;
        int k = 0;
        while (k < B->nopen && !(same_key(open[k].key, op) && open[k].rows == rows))
            k++;
        if (k < B->nopen) {
            bucket *b = &open[k];
            int64_t es = ir_dtype_size(op->in[0]->type.dtype);
            if (b->first_use <= i || (b->cols + cols) * rows * es > B->max_bytes ||
                B->max_bytes <= 0) {
                flush(B, b);
                *b = (bucket){0};
            }
        } else if (B->nopen < MAXOPEN) {
            B->nopen++;
        } else {
            continue; /* a seventeenth kind of collective at once: left alone */
        }
        bucket *b = &open[k];
        if (!b->members.n) {
            b->key = op;
            b->rows = rows;
            b->cols = 0;
            b->first_use = n0;
        }
        su_vec_push(&b->members, m->oom, op);
        b->cols += cols;
        if (B->first_use[op->res[0]->id] < b->first_use)
            b->first_use = B->first_use[op->res[0]->id];
    }
    for (int k = 0; k < B->nopen; k++)
        flush(B, &open[k]);

    for (int i = 0; i < n0; i++) {
        for (int j = 0; j < B->before[i].n; j++)
            su_vec_push(&B->ops, m->oom, B->before[i].v[j]);
        if (!B->drop[i])
            su_vec_push(&B->ops, m->oom, m->ops.v[i]);
        for (int j = 0; j < B->after[i].n; j++)
            su_vec_push(&B->ops, m->oom, B->after[i].v[j]);
    }
    su_vec_free(&m->ops);
    m->ops = B->ops;
    B->ops = (su_vec){0};
}

bool pass_bucket(ir_module *m, int64_t max_bytes, su_buf *err)
{
    if (!m->partitioned) {
        su_buf_printf(err, "gradients are bucketed in a partitioned module");
        return false;
    }
    if ((max_bytes <= 0 && m->train.zero != 1) || !m->updates.n)
        return true; /* zero 1 moves its reduce_scatters even in buckets of one */
    bctx B = {.m = m, .max_bytes = max_bytes, .n0 = m->ops.n};
    su_arena_init(&B.ar, m->oom);
    bool done = su_guarded(m->oom, bucket_run, &B);
    for (int i = 0; B.after && i < B.n0; i++) { /* su_alloc zeroes them */
        su_vec_free(&B.before[i]);
        su_vec_free(&B.after[i]);
    }
    for (int k = 0; k < MAXOPEN; k++)
        su_vec_free(&B.open[k].members);
    su_vec_free(&B.ops);
    su_arena_free(&B.ar);
    if (!done)
        su_oom(m->oom);
    return true;
}
