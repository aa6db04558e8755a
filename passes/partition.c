/* partition.c: SPMD partitioning (DESIGN.md §3.4). Each logical op becomes
 * its local op on local shapes; operands are resharded to what the op needs
 * with the cheapest collectives; partial results are resolved to the value's
 * assigned sharding. Ops over a split dim (amax, softmax, the norms,
 * cross_entropy and its gradient, embedding with a vocabulary-split table)
 * compute on the shards with all-reduced statistics where that moves fewer
 * bytes than gathering the dim. The result is one program for every rank,
 * with the rank's coordinates as implicit parameters of slices and
 * collectives. */
#include "passes.h"

#include <stdio.h>
#include <string.h>

typedef struct part {
    ir_module *dst;
    const pass_explain *ex;
    ir_value **map;         /* logical value id -> its local value */
    su_vec why;             /* dst value id -> reason (const char *) */
    const ir_op *op;        /* the logical op being partitioned */
    const char *need;       /* what the op needs, for reasons */
    const char *choice;     /* why the op computes on a split dim, for reasons */
    int zero3_axis;         /* zero 3: params' storage axis, never contracted; -1 */
    bool dry;               /* count bytes, emit nothing */
    double bytes;           /* bytes sent per rank, while dry */
    su_vec made;            /* reshard_made: operands already resharded */
    int *made_first;        /* logical value id -> its first in made (-1: none) */
    su_vec xent;            /* xent_stats: the forward's row statistics */
} part;

/* A vocabulary-split cross_entropy's row max and sum of exp, all-reduced
 * in the forward: its gradient over the same local logits reads them
 * rather than reducing them again, as Megatron keeps them. */
typedef struct xent_stats {
    const ir_value *logits; /* the local logits, as the op read them */
    unsigned mask;          /* the axes splitting the classes */
    ir_value *mx, *sum;
} xent_stats;

/* An operand resharded for an op: another op of the same repetition and
 * phase that needs the same logical value in the same layout reads it
 * rather than resharding again (the value gathered once for q, k and v).
 * Across phases it is resharded again, as Megatron does: a gathered
 * activation is not kept from the forward to the backward. */
typedef struct reshard_made {
    const ir_value *from;   /* the logical value */
    ir_sharding to;
    int rep;
    uint8_t phase;
    ir_value *v;            /* its local value in that layout */
    int next;               /* the next in made for the same value (-1: none) */
} reshard_made;

/* ---- shardings ---- */

static ir_sharding replicated(void)
{
    return (ir_sharding){.kind = IR_SH_AUTO};
}

static int64_t axes_size(const ir_mesh *me, const uint8_t *axes, int n)
{
    int64_t s = 1;
    for (int i = 0; i < n; i++)
        s *= me->size[axes[i]];
    return s;
}

static unsigned used_axes(const ir_sharding *s, int rank)
{
    unsigned m = 0;
    for (int d = 0; d < rank; d++)
        for (int i = 0; i < s->naxes[d]; i++)
            m |= 1u << s->axes[d][i];
    return m;
}

static ir_type local_type(const ir_mesh *me, const ir_type *t, const ir_sharding *s)
{
    ir_type l = *t;
    for (int d = 0; d < t->rank; d++)
        l.dim[d] /= ir_sharding_split(s, me, d);
    return l;
}

static void sh_text(char *out, size_t n, const ir_module *m, const ir_sharding *s, int rank)
{
    su_buf b;
    su_buf_init(&b, m->oom);
    ir_sharding t = *s;
    t.kind = IR_SH_AUTO;
    ir_sharding_print(&b, &t, &m->mesh, rank);
    snprintf(out, n, "%s", b.s ? b.s + 4 : "()"); /* drop "auto" */
    su_buf_free(&b);
}

/* A value of the logical module, named as the printed logical IR names it. */
static const char *lname(const part *P, const ir_value *lv)
{
    if (P->ex && P->ex->names && lv->id >= 0 && lv->id < P->ex->nvalues && P->ex->names[lv->id])
        return P->ex->names[lv->id];
    return lv->name ? su_sprintf(&P->dst->arena, "%%%s", lv->name) : "%?";
}

/* A value of the partitioned module being built: its name, or its id. */
static const char *vname(const part *P, const ir_value *v)
{
    if (v->name)
        return su_sprintf(&P->dst->arena, "%%%s", v->name);
    return su_sprintf(&P->dst->arena, "%%%d", v->id);
}

/* ---- emitting ---- */

static void set_why(part *P, ir_value *v, const char *why)
{
    while (P->why.n <= v->id)
        su_vec_push(&P->why, P->dst->oom, NULL);
    P->why.v[v->id] = (void *)why;
}

/* A collective or slice of v over axes, whose result has sharding sh; an
 * all_reduce computes red. While dry, only counts bytes and returns a
 * stand-in value. */
static ir_value *comm_red(part *P, ir_opcode code, ir_value *v, int dim, int dim2,
                          const uint8_t *axes, int naxes, const ir_sharding *sh, ir_reduce red)
{
    ir_attrs a = {.dim = dim, .dim2 = dim2, .naxes = naxes, .reduce = (uint8_t)red};
    memcpy(a.axes, axes, (size_t)naxes);
    const ir_type *tin = &v->type;
    ir_type out;
    char err[256];
    if (!ir_infer(&P->dst->mesh, code, &tin, 1, &a, &out, err, sizeof err))
        su_unreachable(); /* shapes follow from valid shardings */
    int64_t n = axes_size(&P->dst->mesh, axes, naxes);
    if (n == 1 && !P->dry) {
        /* over axes of size 1 nothing moves: an identity carries the new
         * sharding */
        ir_op *op = ir_append(P->dst, IR_CONSTRAIN, &v, 1, &(ir_attrs){0}, &out);
        op->loc = P->op->loc;
        op->rep = P->op->rep;
        op->phase = P->op->phase;
        op->res[0]->sh = *sh;
        return op->res[0];
    }
    if (P->dry) {
        P->bytes += pass_comm_bytes(code, tin, &out, n);
        ir_value *s = su_alloc(&P->dst->arena, sizeof *s);
        s->type = out;
        s->sh = *sh;
        return s;
    }
    ir_op *op = ir_append(P->dst, code, &v, 1, &a, &out);
    op->loc = P->op->loc;
    op->rep = P->op->rep;
    op->phase = P->op->phase;
    ir_value *r = op->res[0];
    r->sh = *sh;
    char from[128], to[128];
    sh_text(from, sizeof from, P->dst, &v->sh, v->type.rank);
    sh_text(to, sizeof to, P->dst, sh, v->type.rank);
    set_why(P, r, su_sprintf(&P->dst->arena, "%s%s %s -> %s for %s (%s)",
                             red == IR_RED_MAX ? "max of " : "", vname(P, v), from, to,
                             ir_ops[P->op->code].name, P->need ? P->need : "its operand"));
    return r;
}

static ir_value *comm(part *P, ir_opcode code, ir_value *v, int dim, int dim2,
                      const uint8_t *axes, int naxes, const ir_sharding *sh)
{
    return comm_red(P, code, v, dim, dim2, axes, naxes, sh, IR_RED_SUM);
}

/* ---- resharding ---- */

static int prefix_len(const ir_sharding *a, const ir_sharding *b, int d)
{
    int k = 0;
    while (k < a->naxes[d] && k < b->naxes[d] && a->axes[d][k] == b->axes[d][k])
        k++;
    return k;
}

/* Partial over P: reduce_scatter into the first dim whose required axes
 * continue with partial axes, all_reduce the rest. */
static ir_value *resolve_partial(part *P, ir_value *v, const ir_sharding *req)
{
    int rank = v->type.rank;
    ir_sharding cur = v->sh;
    for (int d = 0; d < rank && cur.partial; d++) {
        int k = prefix_len(&cur, req, d);
        if (k != cur.naxes[d])
            continue;
        uint8_t run[IR_MAX_AXES];
        int n = 0;
        while (k + n < req->naxes[d] && (cur.partial & (1u << req->axes[d][k + n])))
            run[n] = req->axes[d][k + n], n++;
        if (!n || v->type.dim[d] % axes_size(&P->dst->mesh, run, n))
            continue;
        for (int i = 0; i < n; i++) {
            cur.axes[d][cur.naxes[d]++] = run[i];
            cur.partial &= (uint16_t)~(1u << run[i]);
        }
        v = comm(P, IR_REDUCE_SCATTER, v, d, 0, run, n, &cur);
        break;
    }
    if (cur.partial) {
        uint8_t axes[IR_MAX_AXES];
        int n = 0;
        for (int a = 0; a < P->dst->mesh.naxes; a++)
            if (cur.partial & (1u << a))
                axes[n++] = (uint8_t)a;
        cur.partial = 0;
        v = comm(P, IR_ALL_REDUCE, v, 0, 0, axes, n, &cur);
    }
    return v;
}

/* Removes the axes of dim d past its common prefix with req: the last one
 * moves by all_to_all when another dim wants it next, else the whole tail
 * is gathered at once. */
static ir_value *shrink_dim(part *P, ir_value *v, const ir_sharding *req, int d)
{
    ir_sharding cur = v->sh;
    int rank = v->type.rank, k = prefix_len(&cur, req, d);
    uint8_t a = cur.axes[d][cur.naxes[d] - 1];
    for (int d2 = 0; d2 < rank; d2++) {
        int k2 = prefix_len(&cur, req, d2);
        if (d2 == d || k2 != cur.naxes[d2] || k2 >= req->naxes[d2] || req->axes[d2][k2] != a)
            continue;
        if (v->type.dim[d2] % P->dst->mesh.size[a])
            continue;
        cur.naxes[d]--;
        cur.axes[d2][cur.naxes[d2]++] = a;
        return comm(P, IR_ALL_TO_ALL, v, d2, d, &a, 1, &cur);
    }
    uint8_t tail[IR_MAX_AXES];
    int n = cur.naxes[d] - k;
    memcpy(tail, &cur.axes[d][k], (size_t)n);
    cur.naxes[d] = (uint8_t)k;
    return comm(P, IR_ALL_GATHER, v, d, 0, tail, n, &cur);
}

/* Adds to dim d the next required axes that no dim holds, by a slice. */
static ir_value *grow_dim(part *P, ir_value *v, const ir_sharding *req, int d, bool *done)
{
    ir_sharding cur = v->sh;
    unsigned used = used_axes(&cur, v->type.rank);
    uint8_t run[IR_MAX_AXES];
    int n = 0;
    for (int k = cur.naxes[d]; k < req->naxes[d] && !(used & (1u << req->axes[d][k])); k++)
        run[n++] = req->axes[d][k];
    if (!n)
        return v;
    for (int i = 0; i < n; i++)
        cur.axes[d][cur.naxes[d]++] = run[i];
    *done = false;
    return comm(P, IR_SLICE, v, d, 0, run, n, &cur);
}

/* v with sharding req (not partial), by the steps above in a loop: each
 * step brings one dim closer, so it ends. */
static ir_value *reshard(part *P, ir_value *v, const ir_sharding *req)
{
    int rank = v->type.rank;
    if (v->sh.partial)
        v = resolve_partial(P, v, req);
    for (int iter = 0; iter < 4 * IR_MAX_RANK * IR_MAX_AXES; iter++) {
        bool done = true;
        for (int d = 0; d < rank && done; d++)
            if (prefix_len(&v->sh, req, d) < v->sh.naxes[d]) {
                v = shrink_dim(P, v, req, d);
                done = false;
            }
        for (int d = 0; d < rank && done; d++)
            v = grow_dim(P, v, req, d, &done);
        if (done)
            break;
    }
    for (int d = 0; d < rank; d++)
        if (prefix_len(&v->sh, req, d) != req->naxes[d] || v->sh.naxes[d] != req->naxes[d])
            su_unreachable(); /* every step moves one dim closer */
    return v;
}

/* Bytes reshard would send, without emitting. */
static double reshard_cost(part *P, ir_value *v, const ir_sharding *req)
{
    bool dry = P->dry;
    double before = P->bytes;
    P->dry = true;
    reshard(P, v, req);
    double cost = P->bytes - before;
    P->bytes = before;
    P->dry = dry;
    return cost;
}

static ir_value *operand(part *P, int i, const ir_sharding *req, const char *need)
{
    const ir_value *lv = P->op->in[i];
    const char *why = P->ex && lv->id < P->ex->nvalues ? P->ex->why[lv->id] : NULL;
    if (why) /* the rule or annotation behind the operand's sharding */
        need = su_sprintf(&P->dst->arena, "%s; %s has its sharding by: %s", need,
                          lname(P, lv), why);
    for (int k = P->made_first[lv->id]; k >= 0; k = ((reshard_made *)P->made.v[k])->next) {
        const reshard_made *r = P->made.v[k];
        if (r->rep == P->op->rep && r->phase == P->op->phase && r->to.partial == req->partial &&
            ir_sharding_eq(&r->to, req, lv->type.rank))
            return r->v;
    }
    P->need = need;
    ir_value *from = P->map[lv->id], *v = reshard(P, from, req);
    P->need = NULL;
    if (v != from && !P->dry) {
        reshard_made *r = su_alloc(&P->dst->arena, sizeof *r);
        *r = (reshard_made){lv, *req, P->op->rep, P->op->phase, v, P->made_first[lv->id]};
        P->made_first[lv->id] = P->made.n;
        su_vec_push(&P->made, P->dst->oom, r);
    }
    return v;
}

/* ---- local ops ---- */

/* Emits the local op of P->op on local operands; its result has sharding
 * natural (possibly partial); maps the logical result to it resharded to
 * the assigned sharding. */
static ir_value *emit_local(part *P, ir_opcode code, ir_value **in, int nin, const ir_attrs *attrs)
{
    ir_attrs a = *attrs;
    char err[256];
    ir_value *r = ir_emit(P->dst, code, in, nin, &a, err, sizeof err);
    if (!r)
        su_unreachable(); /* local shapes follow from valid shardings */
    r->def->loc = P->op->loc;
    r->def->rep = P->op->rep;
    r->def->phase = P->op->phase;
    return r;
}

/* Maps the logical result to r, whose sharding is natural, resharded to
 * the result's assigned sharding. */
static void map_result(part *P, ir_value *r, const ir_sharding *natural)
{
    const ir_value *lr = P->op->res[0];
    r->name = lr->name;
    r->sh = *natural;
    r->sh.kind = lr->sh.kind;
    const char *why = P->ex && lr->id < P->ex->nvalues ? P->ex->why[lr->id] : NULL;
    P->need = why ? su_sprintf(&P->dst->arena, "the result's sharding, by: %s", why)
                  : "the result's sharding";
    if (P->choice)
        P->need = su_sprintf(&P->dst->arena, "%s; %s", P->need, P->choice);
    ir_value *v = reshard(P, r, &lr->sh);
    if (v != r) { /* the name goes to the value that holds the result */
        v->name = lr->name;
        r->name = NULL;
    }
    P->map[lr->id] = v;
    P->need = NULL;
}

static void finish(part *P, ir_value **in, int nin, const ir_sharding *natural)
{
    map_result(P, emit_local(P, P->op->code, in, nin, &P->op->a), natural);
}

/* As finish, multiplying the local result by scale: a mean over a share of
 * the elements becomes that share's part of the global mean. */
static void finish_scaled(part *P, ir_value **in, int nin, const ir_sharding *natural,
                          double scale)
{
    ir_value *r = emit_local(P, P->op->code, in, nin, &P->op->a);
    ir_type st = {.dtype = r->type.dtype};
    ir_attrs ca = {.value = scale};
    ir_op *c = ir_append(P->dst, IR_CONST, NULL, 0, &ca, &st);
    c->loc = P->op->loc;
    c->rep = P->op->rep;
    c->phase = P->op->phase;
    c->res[0]->sh = replicated();
    ir_value *m[2] = {r, c->res[0]};
    map_result(P, emit_local(P, IR_MUL, m, 2, &(ir_attrs){0}), natural);
}

/* The sharding of the operand dims aligned with the result's (NumPy
 * broadcasting): dims of size 1 or missing carry no axes. */
static ir_sharding project(const ir_sharding *r, const ir_type *rt, const ir_type *ot)
{
    ir_sharding s = replicated();
    int off = rt->rank - ot->rank;
    for (int d = 0; d < ot->rank; d++) {
        if (ot->dim[d] != rt->dim[d + off])
            continue;
        s.naxes[d] = r->naxes[d + off];
        memcpy(s.axes[d], r->axes[d + off], IR_MAX_AXES);
    }
    return s;
}

static ir_sharding no_partial(ir_sharding s)
{
    s.partial = 0;
    s.kind = IR_SH_AUTO;
    return s;
}

/* Elementwise ops, broadcasting ones and optimizer updates: every operand
 * follows the result (a scalar, like adamw's step, is whole). */
static void part_elementwise(part *P)
{
    const ir_op *op = P->op;
    const ir_value *lr = op->res[0];
    ir_value *in[4];
    for (int i = 0; i < op->nin; i++) {
        ir_sharding req = project(&lr->sh, &lr->type, &op->in[i]->type);
        in[i] = operand(P, i, &req, "operands of an elementwise op follow its result");
    }
    ir_sharding nat = no_partial(lr->sh);
    finish(P, in, op->nin, &nat);
}

/* dst's dim dd takes src's dim sd's axes. */
static void copy_dim(ir_sharding *dst, int dd, const ir_sharding *src, int sd)
{
    if (dd < 0 || dd >= IR_MAX_RANK || sd < 0 || sd >= IR_MAX_RANK)
        su_unreachable();
    dst->naxes[dd] = src->naxes[sd];
    memcpy(dst->axes[dd], src->axes[sd], IR_MAX_AXES);
}

/* s without the axes in mask, in every dim. */
static ir_sharding strip_axes(ir_sharding s, unsigned mask)
{
    for (int d = 0; d < IR_MAX_RANK; d++) {
        int k = 0;
        for (int i = 0; i < s.naxes[d]; i++)
            if (!((mask >> s.axes[d][i]) & 1))
                s.axes[d][k++] = s.axes[d][i];
        s.naxes[d] = (uint8_t)k;
    }
    return s;
}

/* Sharding with the axes of dim d removed. */
static ir_sharding clear_dim(ir_sharding s, int d)
{
    s.naxes[d] = 0;
    return s;
}

/* The operand shardings and the natural result for contracting over the
 * axes of k (dim 0 of k): those axes leave every other dim (the result is
 * partial over them instead) and split both K dims. */
static void contract_as(const ir_sharding *k, const ir_sharding *base_a, int ka,
                        const ir_sharding *base_b, int kb, const ir_value *lr, ir_sharding *qa,
                        ir_sharding *qb, ir_sharding *nat)
{
    unsigned mask = 0;
    for (int j = 0; j < k->naxes[0]; j++)
        mask |= 1u << k->axes[0][j];
    *qa = strip_axes(*base_a, mask);
    *qb = strip_axes(*base_b, mask);
    *nat = strip_axes(no_partial(lr->sh), mask);
    nat->partial = (uint16_t)mask;
    copy_dim(qa, ka, k, 0);
    copy_dim(qb, kb, k, 0);
}

/* a [..., M, K] @ b [..., K, N]: batch, M and N follow the result; the
 * contracting dim keeps the axes of whichever operand has them, if that is
 * cheaper than gathering, and the result is then partial over them. */
static void part_matmul(part *P)
{
    const ir_op *op = P->op;
    const ir_value *la = op->in[0], *lb = op->in[1], *lr = op->res[0];
    int ra = la->type.rank, rb = lb->type.rank;
    int ka = ra - 1, kb = rb == 1 ? 0 : rb - 2;
    ir_sharding base_a = replicated(), base_b = replicated();
    /* batch dims and M from the result for a; batch and N for b */
    int nb = lr->type.rank - (ra >= 2) - (rb >= 2); /* batch dims of the result */
    for (int d = 0; d < ra - 2; d++) {
        int rd = nb - (ra - 2) + d;
        if (la->type.dim[d] == lr->type.dim[rd])
            copy_dim(&base_a, d, &lr->sh, rd);
    }
    if (ra >= 2)
        copy_dim(&base_a, ra - 2, &lr->sh, nb);
    for (int d = 0; d < rb - 2; d++) {
        int rd = nb - (rb - 2) + d;
        if (lb->type.dim[d] == lr->type.dim[rd])
            copy_dim(&base_b, d, &lr->sh, rd);
    }
    if (rb >= 2) {
        int nd = lr->type.rank - 1;
        copy_dim(&base_b, rb - 1, &lr->sh, nd);
    }
    /* candidates for the contracting dim's axes */
    const ir_value *ca = P->map[la->id], *cb = P->map[lb->id];
    ir_sharding cands[3];
    int nc = 0;
    const ir_sharding *srcs[2] = {&ca->sh, &cb->sh};
    int kdims[2] = {ka, kb};
    for (int i = 0; i < 2; i++) {
        const ir_sharding *s = srcs[i];
        int kd = kdims[i];
        bool zero3 = false; /* ZeRO-3 gathers params: it never computes on their shards */
        for (int j = 0; j < s->naxes[kd] && op->in[i]->def->code == IR_PARAM; j++)
            zero3 |= s->axes[kd][j] == P->zero3_axis;
        if (!s->naxes[kd] || zero3 ||
            la->type.dim[ka] % axes_size(&P->dst->mesh, s->axes[kd], s->naxes[kd]))
            continue;
        cands[nc] = replicated();
        copy_dim(&cands[nc++], 0, s, kd);
    }
    cands[nc++] = replicated(); /* contract unsplit */
    /* Cheapest first by the bytes the operands need moved before the local
     * matmul can run: gathering an operand also repeats the matmul on every
     * rank of the group, where a split contraction keeps it divided and
     * pays only for resolving the partial result (Megatron's row-parallel
     * layer; reduce_scatter when the result is wanted split, as in sequence
     * parallelism). Ties go by the total bytes, then the first candidate. */
    int best = 0;
    double best_ops = -1, best_cost = -1;
    ir_sharding qa, qb, nat;
    for (int i = 0; i < nc; i++) {
        contract_as(&cands[i], &base_a, ka, &base_b, kb, lr, &qa, &qb, &nat);
        double ops = reshard_cost(P, (ir_value *)ca, &qa) + reshard_cost(P, (ir_value *)cb, &qb);
        ir_value tmp = {.type = local_type(&P->dst->mesh, &lr->type, &nat), .sh = nat};
        double cost = ops + reshard_cost(P, &tmp, &lr->sh);
        if (best_ops < 0 || ops < best_ops || (ops == best_ops && cost < best_cost))
            best = i, best_ops = ops, best_cost = cost;
    }
    contract_as(&cands[best], &base_a, ka, &base_b, kb, lr, &qa, &qb, &nat);
    ir_value *in[2] = {operand(P, 0, &qa, "the left operand of '@' follows its result"),
                       operand(P, 1, &qb, "the right operand of '@' follows its result")};
    finish(P, in, 2, &nat);
}

/* ---- statistics over a split dim ----
 *
 * amax, softmax, layernorm, rmsnorm, cross_entropy (and its gradient) over
 * a dim split over some axes compute local statistics on each rank's
 * shard and combine them with an all_reduce of one value per row (max or
 * sum), as Megatron-LM's vocabulary-parallel cross-entropy does, instead of
 * gathering the dim. The formulas are runtime/cpu/cpu.c's, in f32 (f16 and bf16
 * operands are widened first); the result stays split. Embedding with a
 * vocabulary-split table looks up the rows each rank holds (zeros for the
 * others), a partial result. The ids (labels) are checked against the
 * whole vocabulary (classes) first, as the unsplit op checks them. Each op
 * chooses this over gathering by the bytes moved, gathering on a tie. */

static unsigned dim_mask(const ir_sharding *s, int d)
{
    unsigned m = 0;
    for (int i = 0; i < s->naxes[d]; i++)
        m |= 1u << s->axes[d][i];
    return m;
}

/* An op of the decomposition of P->op on local values, its result with
 * sharding sh (partial where a rank holds a piece of a statistic). */
static ir_value *local(part *P, ir_opcode code, ir_value *a, ir_value *b, const ir_attrs *at,
                       const ir_sharding *sh)
{
    ir_value *in[2] = {a, b};
    ir_attrs none = {0};
    ir_value *r = emit_local(P, code, in, b ? 2 : a ? 1 : 0, at ? at : &none);
    r->sh = *sh;
    r->sh.kind = IR_SH_AUTO;
    return r;
}

/* A scalar constant of dtype t. */
static ir_value *cst(part *P, double v, ir_dtype t)
{
    ir_type st = {.dtype = t};
    ir_op *c = ir_append(P->dst, IR_CONST, NULL, 0, &(ir_attrs){.value = v}, &st);
    c->loc = P->op->loc;
    c->rep = P->op->rep;
    c->phase = P->op->phase;
    c->res[0]->sh = replicated();
    return c->res[0];
}

static ir_value *cast_to(part *P, ir_value *v, ir_dtype t)
{
    if (v->type.dtype == t)
        return v;
    ir_attrs a = {.dtype = t};
    return local(P, IR_CAST, v, NULL, &a, &v->sh);
}

/* The local reduction code of x over dim ax, kept as size 1: partial over
 * the axes in mask that split ax. */
static ir_value *row_stat(part *P, ir_opcode code, ir_value *x, int ax, unsigned mask)
{
    ir_sharding sh = clear_dim(x->sh, ax);
    sh.partial = (uint16_t)mask;
    ir_attrs a = {.axis = ax, .keepdims = true};
    return local(P, code, x, NULL, &a, &sh);
}

/* What the values a decomposition names are named after: the op's
 * result, or the op when the result has no name. */
static const char *stat_base(const part *P)
{
    const char *r = P->op->res[0]->name;
    return r ? r : ir_ops[P->op->code].name;
}

/* v all-reduced with red over the axes of mask (mesh order), which it is
 * partial over; why names the statistic for --explain-sharding, and v is
 * named after the op's result and tag ("%p_max") so reasons and the
 * printed IR agree. */
static ir_value *reduce_over(part *P, ir_value *v, unsigned mask, ir_reduce red, const char *why,
                             const char *tag)
{
    if (!v->name && !P->dry)
        v->name = su_sprintf(&P->dst->arena, "%s_%s", stat_base(P), tag);
    uint8_t axes[IR_MAX_AXES];
    int n = 0;
    for (int a = 0; a < P->dst->mesh.naxes; a++)
        if (mask & (1u << a))
            axes[n++] = (uint8_t)a;
    ir_sharding sh = v->sh;
    sh.partial &= (uint16_t)~mask;
    const char *need = P->need;
    P->need = P->choice ? su_sprintf(&P->dst->arena, "%s; %s", why, P->choice) : why;
    ir_value *r = comm_red(P, IR_ALL_REDUCE, v, 0, 0, axes, n, &sh, red);
    P->need = need;
    return r;
}

/* Bytes per rank of k all_reduces of the statistics of a value of global
 * type t with sharding sh, one per row of dim ax (kept as size 1). */
static double stat_bytes(const part *P, const ir_type *t, const ir_sharding *sh, int ax, int k)
{
    ir_type st = local_type(&P->dst->mesh, t, sh);
    st.dim[ax] = 1;
    st.dtype = IR_F32;
    int64_t n = ir_sharding_split(sh, &P->dst->mesh, ax);
    return k * pass_comm_bytes(IR_ALL_REDUCE, &st, &st, n);
}

/* softmax of the f32 local x over dim ax, split over the axes of mask:
 * exp(x - max) / sum with the max and the sum over the whole dim. The row
 * max and sum (kept dims) go to *mx and *sum. */
static ir_value *split_exp(part *P, ir_value *x, int ax, unsigned mask, ir_value **mx,
                           ir_value **sum)
{
    *mx = reduce_over(P, row_stat(P, IR_AMAX, x, ax, mask), mask, IR_RED_MAX,
                      "the row max over the split dim", "max");
    ir_value *e = local(P, IR_EXP, local(P, IR_SUB, x, *mx, NULL, &x->sh), NULL, NULL, &x->sh);
    *sum = reduce_over(P, row_stat(P, IR_SUM, e, ax, mask), mask, IR_RED_SUM,
                       "the row sum of exp over the split dim", "sum");
    return e;
}

/* Which global class (or vocabulary row) each element of this rank's
 * block of a dim of size n split over the axes of dim d of sh is: iota
 * [n] (named after the op's result and tag), sliced at the rank's
 * coordinate; why says what for. */
static ir_value *class_ids(part *P, int64_t n, const ir_sharding *sh, int d, const char *tag,
                           const char *why)
{
    ir_type t = {.dtype = IR_I32, .rank = 1, .dim = {n}};
    ir_attrs a = {.nlist = 1, .list = {n}};
    ir_op *io = ir_append(P->dst, IR_IOTA, NULL, 0, &a, &t);
    io->loc = P->op->loc;
    io->rep = P->op->rep;
    io->phase = P->op->phase;
    io->res[0]->sh = replicated();
    io->res[0]->name = su_sprintf(&P->dst->arena, "%s_%s", stat_base(P), tag);
    ir_sharding s = replicated();
    copy_dim(&s, 0, sh, d);
    const char *need = P->need;
    P->need = why;
    ir_value *r = comm(P, IR_SLICE, io->res[0], 0, 0, sh->axes[d], sh->naxes[d], &s);
    P->need = need;
    return r;
}

/* one_hot(labels) over this rank's classes, as dtype t: labels [...]
 * compared with the global class of each local column, [..., C/n]. */
static ir_value *local_one_hot(part *P, ir_value *labels, ir_value *cls, ir_dtype t)
{
    ir_attrs ra = {.nlist = labels->type.rank + 1};
    for (int d = 0; d < labels->type.rank; d++)
        ra.list[d] = labels->type.dim[d];
    ra.list[labels->type.rank] = 1;
    ir_sharding sh = labels->sh;
    ir_value *l = local(P, IR_RESHAPE, labels, NULL, &ra, &sh);
    copy_dim(&sh, labels->type.rank, &cls->sh, 0);
    return cast_to(P, local(P, IR_EQ, l, cls, NULL, &sh), t);
}

/* ids [...] against this rank's rows cls of a vocabulary of n rows:
 * *in_range is 1 where ids[i] is one of them, else 0; the result is the
 * local row (0 where out of range). Both are partial over the axes of the
 * vocabulary: each rank holds its own. */
static ir_value *local_ids(part *P, ir_value *ids, ir_value *cls, ir_value **in_range)
{
    int64_t nl = cls->type.dim[0];
    ir_sharding sh = ids->sh;
    sh.partial = (uint16_t)dim_mask(&cls->sh, 0);
    ir_sharding one = replicated();
    one.partial = sh.partial;
    ir_attrs a0 = {.axis = 0};
    ir_value *last = local(P, IR_AMAX, cls, NULL, &a0, &one); /* offset + nl - 1 */
    ir_value *off = local(P, IR_SUB, last, cst(P, (double)(nl - 1), IR_I32), NULL, &one);
    ir_value *rel = local(P, IR_SUB, ids, off, NULL, &sh);
    ir_value *ge = local(P, IR_GT, rel, cst(P, -1, IR_I32), NULL, &sh);
    ir_value *lt = local(P, IR_GT, cst(P, (double)nl, IR_I32), rel, NULL, &sh);
    *in_range = local(P, IR_MUL, ge, lt, NULL, &sh);
    return local(P, IR_MUL, rel, *in_range, NULL, &sh);
}

/* ids (code IR_CHECK_IDS) or labels (IR_CHECK_LABELS) checked against
 * the n rows of a whole vocabulary (the n classes): where it is split, each
 * rank looks up only its own rows and takes an id outside them all for
 * another rank's, so the error the unsplit op gives needs a check of its
 * own, on every rank of the group (they hold the same ids). */
static ir_value *checked_ids(part *P, ir_opcode code, ir_value *ids, int64_t n)
{
    ir_attrs a = {.bound = n};
    return local(P, code, ids, NULL, &a, &ids->sh);
}

/* mask [...] (i32 0/1) as dtype t, shaped [..., 1] to scale rows. */
static ir_value *row_mask(part *P, ir_value *mask, ir_dtype t)
{
    ir_attrs ra = {.nlist = mask->type.rank + 1};
    for (int d = 0; d < mask->type.rank; d++)
        ra.list[d] = mask->type.dim[d];
    ra.list[mask->type.rank] = 1;
    return local(P, IR_RESHAPE, cast_to(P, mask, t), NULL, &ra, &mask->sh);
}

/* A reason: the choice between a split dim and gathering it (or the
 * alternative alt names), by bytes. */
static const char *split_alt(part *P, const char *what, double split, double whole,
                             const char *alt)
{
    return su_sprintf(&P->dst->arena, "%s: %.0f bytes per rank against %.0f %s", what, split,
                      whole, alt);
}

static const char *split_why(part *P, const char *what, double split, double whole)
{
    return split_alt(P, what, split, whole, "for gathering it");
}

/* layernorm (b not NULL) or rmsnorm of the f32 local x over its last dim,
 * of global size n, split over the axes of mask, with gain g and bias b
 * split alike: runtime/cpu/cpu.c's two passes, the sums all-reduced and
 * divided by n, eps added to the variance. */
static ir_value *split_norm(part *P, ir_value *x, ir_value *g, ir_value *b, double eps,
                            unsigned mask, int64_t n)
{
    int ax = x->type.rank - 1;
    ir_value *c = x, *dn = cst(P, (double)n, IR_F32);
    if (b) {
        ir_value *s1 = reduce_over(P, row_stat(P, IR_SUM, x, ax, mask), mask, IR_RED_SUM,
                                   "the row sum (the mean) over the split dim", "mean");
        c = local(P, IR_SUB, x, local(P, IR_DIV, s1, dn, NULL, &s1->sh), NULL, &x->sh);
    }
    ir_value *sq = local(P, IR_MUL, c, c, NULL, &x->sh);
    ir_value *ss = reduce_over(P, row_stat(P, IR_SUM, sq, ax, mask), mask, IR_RED_SUM,
                               "the row sum of squares (the variance) over the split dim", "sumsq");
    ir_value *var = local(P, IR_DIV, ss, dn, NULL, &ss->sh);
    ir_value *r = local(P, IR_RSQRT, local(P, IR_ADD, var, cst(P, eps, IR_F32), NULL, &ss->sh),
                        NULL, NULL, &ss->sh);
    ir_value *y = local(P, IR_MUL, local(P, IR_MUL, c, r, NULL, &x->sh), g, NULL, &x->sh);
    return b ? local(P, IR_ADD, y, b, NULL, &x->sh) : y;
}

/* What operand i (> 0) of a softmax-like op computing on sharding q over
 * dim ax needs: gains and biases split as ax, labels follow the rows. */
static ir_sharding follower(const ir_op *op, const ir_sharding *q, int ax)
{
    ir_sharding s = replicated();
    if (op->code == IR_XENT_GRAD || op->code == IR_XENT) {
        for (int d = 0; d < ax; d++)
            copy_dim(&s, d, q, d);
        return s;
    }
    copy_dim(&s, 0, q, ax);
    return s;
}

/* The all_reduces of statistics a split dim costs each op. */
static int nstats(ir_opcode code)
{
    switch (code) {
    case IR_XENT: return 3;       /* max, sum of exp, the label's logit */
    case IR_RMSNORM: return 1;    /* sum of squares */
    default: return 2;            /* softmax: max, sum; layernorm: sum, sum of squares */
    }
}

/* Bytes moved to compute P->op (over dim ax) on operand sharding q and
 * bring its result (natural sharding q, whole over ax when q is) to the
 * assigned one. */
static double norm_cost(part *P, const ir_sharding *q, int ax)
{
    const ir_op *op = P->op;
    const ir_value *lr = op->res[0];
    double c = reshard_cost(P, P->map[op->in[0]->id], q);
    ir_sharding f = follower(op, q, ax);
    for (int i = 1; i < op->nin; i++)
        c += reshard_cost(P, P->map[op->in[i]->id], &f);
    if (q->naxes[ax])
        c += stat_bytes(P, &op->in[0]->type, q, ax, nstats(op->code));
    if (op->code != IR_XENT) { /* a loss's scalar is resolved alike either way */
        ir_value t = {.type = local_type(&P->dst->mesh, &lr->type, q), .sh = *q};
        c += reshard_cost(P, &t, &lr->sh);
    }
    return c;
}

/* The operand sharding P->op computes on: the result's (the operand's for
 * a loss), with dim ax whole, or split as the result or the operand splits
 * it, whichever moves the fewest bytes, whole on a tie. *why says why. */
static ir_sharding norm_choice(part *P, int ax, const char **why)
{
    const ir_op *op = P->op;
    const ir_sharding *cur = &P->map[op->in[0]->id]->sh;
    ir_sharding base = no_partial(op->code == IR_XENT ? *cur : op->res[0]->sh);
    ir_sharding best = clear_dim(base, ax);
    double whole = norm_cost(P, &best, ax), best_cost = whole;
    const ir_sharding *src[2] = {&base, cur};
    for (int i = 0; i < 2; i++) {
        if (!src[i]->naxes[ax])
            continue;
        ir_sharding q = strip_axes(base, dim_mask(src[i], ax));
        copy_dim(&q, ax, src[i], ax);
        double c = norm_cost(P, &q, ax);
        if (c < best_cost)
            best = q, best_cost = c;
    }
    if (best.naxes[ax])
        *why = P->choice = split_why(P, "the dim split, statistics all-reduced", best_cost,
                                     whole);
    else if (src[0]->naxes[ax] || cur->naxes[ax])
        *why = su_sprintf(&P->dst->arena, "the dim whole: gathering costs %.0f bytes per rank, "
                          "no more than partial statistics", whole);
    else
        *why = NULL;
    return best;
}

/* The operand sharding and natural result of a reduction over a dim split
 * over the axes in keep (a subset of what the operand has there): the
 * other dims follow the result, without the kept axes; the result is
 * partial over them. */
static void reduce_as(const ir_op *op, const ir_sharding *cur, bool keep, ir_sharding *req,
                      ir_sharding *nat)
{
    const ir_value *lx = op->in[0], *lr = op->res[0];
    int ax = (int)op->a.axis, rank = lx->type.rank;
    *req = replicated();
    for (int d = 0, rd = 0; d < rank; d++) {
        if (d == ax) {
            rd += op->a.keepdims;
            continue;
        }
        copy_dim(req, d, &lr->sh, rd++);
    }
    *nat = no_partial(lr->sh);
    if (!keep)
        return;
    unsigned mask = 0;
    for (int i = 0; i < cur->naxes[ax]; i++)
        mask |= 1u << cur->axes[ax][i];
    *req = strip_axes(*req, mask);
    *nat = strip_axes(*nat, mask);
    copy_dim(req, ax, cur, ax);
    nat->partial = (uint16_t)mask;
}

/* sum/mean/amax over a split dim stay local and give a partial result
 * (mean scaled by the local share), resolved after (amax by an all_reduce
 * with max, whole: a max cannot be reduce-scattered); unless moving the
 * operand's split elsewhere first costs less (the split is kept on a tie). */
static void part_reduce(part *P)
{
    const ir_op *op = P->op;
    const ir_value *lx = op->in[0], *lr = op->res[0];
    const ir_mesh *me = &P->dst->mesh;
    int ax = (int)op->a.axis;
    ir_value *cx = P->map[lx->id];
    const ir_sharding *cur = &cx->sh;
    ir_sharding req, nat, kreq, knat;
    reduce_as(op, cur, false, &req, &nat);
    bool keep = cur->naxes[ax] && !cur->partial;
    double split = 0, whole = 0;
    if (keep) { /* by the bytes moved before and after */
        reduce_as(op, cur, true, &kreq, &knat);
        ir_value t1 = {.type = local_type(me, &lr->type, &nat), .sh = nat};
        ir_value t2 = {.type = local_type(me, &lr->type, &knat), .sh = knat};
        whole = reshard_cost(P, cx, &req) + reshard_cost(P, &t1, &lr->sh);
        split = reshard_cost(P, cx, &kreq);
        if (op->code == IR_AMAX) {
            split += pass_comm_bytes(IR_ALL_REDUCE, &t2.type, &t2.type,
                                     axes_size(me, cur->axes[ax], cur->naxes[ax]));
            t2.sh.partial = 0;
        }
        split += reshard_cost(P, &t2, &lr->sh);
        keep = split <= whole;
        if (keep)
            req = kreq, nat = knat;
    }
    if (op->code == IR_AMAX && keep) {
        P->choice = split_why(P, "the max taken locally, then over ranks", split, whole);
        ir_value *x = operand(P, 0, &req, P->choice);
        ir_value *r = local(P, IR_AMAX, x, NULL, &op->a, &nat);
        ir_value *m = reduce_over(P, r, nat.partial, IR_RED_MAX, "the max over the split dim",
                                  "max");
        nat.partial = 0;
        map_result(P, m, &nat);
        return;
    }
    ir_value *x = operand(P, 0, &req, keep ? "reduced locally, then summed over ranks"
                                           : "the reduced dim whole");
    if (op->code == IR_MEAN && keep) {
        /* the local mean is over a share of the dim: scale by that share */
        int64_t n = axes_size(me, cur->axes[ax], cur->naxes[ax]);
        finish_scaled(P, &x, 1, &nat, 1.0 / (double)n);
        return;
    }
    finish(P, &x, 1, &nat);
}

/* softmax, layernorm, rmsnorm over dim ax: with the dim whole (gathered;
 * a result wanted split there is sliced after), or split with partial
 * statistics (norm_choice); the result then stays split. */
static void part_norm(part *P)
{
    const ir_op *op = P->op;
    const ir_value *lr = op->res[0];
    int ax = op->code == IR_SOFTMAX ? (int)op->a.axis : lr->type.rank - 1;
    const char *why = NULL;
    ir_sharding q = norm_choice(P, ax, &why), rep = replicated();
    ir_value *in[3];
    if (!q.naxes[ax]) {
        in[0] = operand(P, 0, &q, why ? why : "the normalised dim whole");
        for (int i = 1; i < op->nin; i++)
            in[i] = operand(P, i, &rep, "gains and biases whole");
        finish(P, in, op->nin, &q);
        return;
    }
    ir_sharding f = follower(op, &q, ax);
    in[0] = operand(P, 0, &q, why);
    for (int i = 1; i < op->nin; i++)
        in[i] = cast_to(P, operand(P, i, &f, "gains and biases split as the normalised dim"),
                        IR_F32);
    ir_dtype dt = in[0]->type.dtype;
    ir_value *x = cast_to(P, in[0], IR_F32), *y, *mx, *sum;
    unsigned mask = dim_mask(&q, ax);
    if (op->code == IR_SOFTMAX) {
        ir_value *e = split_exp(P, x, ax, mask, &mx, &sum);
        y = local(P, IR_DIV, e, sum, NULL, &x->sh);
    } else {
        y = split_norm(P, x, in[1], op->nin > 2 ? in[2] : NULL, op->a.eps, mask,
                       lr->type.dim[ax]);
    }
    map_result(P, cast_to(P, y, dt), &q);
}

/* cross_entropy_grad(logits, labels) = softmax(logits) - one_hot(labels),
 * rows following the result: the class dim whole, or split (norm_choice),
 * each rank's one-hot at its classes. Split, the softmax reads the row max
 * and sum of exp the forward's cross_entropy all-reduced for the same
 * local logits (xent_stats): the backward communicates nothing here. */
static void part_xent_grad(part *P)
{
    const ir_op *op = P->op;
    const ir_value *lr = op->res[0];
    int ax = lr->type.rank - 1;
    const char *why = NULL;
    ir_sharding q = norm_choice(P, ax, &why), ql = follower(op, &q, ax);
    ir_value *in[2] = {operand(P, 0, &q, why ? why : "logits whole along the classes"),
                       operand(P, 1, &ql, "labels follow the rows")};
    if (!q.naxes[ax]) {
        finish(P, in, 2, &q);
        return;
    }
    in[1] = checked_ids(P, IR_CHECK_LABELS, in[1], lr->type.dim[ax]);
    ir_dtype dt = in[0]->type.dtype;
    unsigned mask = dim_mask(&q, ax);
    ir_value *x = cast_to(P, in[0], IR_F32), *mx, *sum, *e;
    const xent_stats *kept = NULL;
    for (int i = 0; i < P->xent.n && !kept; i++) {
        const xent_stats *k = P->xent.v[i];
        if (k->logits == in[0] && k->mask == mask)
            kept = k;
    }
    if (kept) { /* the forward's statistics of these very logits */
        sum = kept->sum;
        e = local(P, IR_EXP, local(P, IR_SUB, x, kept->mx, NULL, &x->sh), NULL, NULL, &x->sh);
    } else {
        e = split_exp(P, x, ax, mask, &mx, &sum);
    }
    ir_value *p = local(P, IR_DIV, e, sum, NULL, &x->sh);
    ir_value *cls = class_ids(P, lr->type.dim[ax], &q, ax, "classes",
                              "the classes this rank holds");
    ir_value *oh = local_one_hot(P, in[1], cls, IR_F32);
    map_result(P, cast_to(P, local(P, IR_SUB, p, oh, NULL, &x->sh), dt), &q);
}

/* cross_entropy over logits split along the classes: per row
 * max + log(sum exp(x - max)) - x[label], each statistic all-reduced (the
 * label's logit is 0 on the ranks without its class), then the mean over
 * the rows as part_loss takes it. */
static void part_xent_split(part *P, const ir_sharding *q, const char *why)
{
    const ir_op *op = P->op;
    const ir_mesh *me = &P->dst->mesh;
    int ax = op->in[0]->type.rank - 1;
    ir_sharding ql = follower(op, q, ax);
    ir_value *in[2] = {operand(P, 0, q, why), operand(P, 1, &ql, "labels follow the rows")};
    in[1] = checked_ids(P, IR_CHECK_LABELS, in[1], op->in[0]->type.dim[ax]);
    unsigned mask = dim_mask(q, ax);
    ir_value *x = cast_to(P, in[0], IR_F32), *mx, *sum;
    split_exp(P, x, ax, mask, &mx, &sum);
    xent_stats *kept = su_alloc(&P->dst->arena, sizeof *kept);
    *kept = (xent_stats){in[0], mask, mx, sum};
    su_vec_push(&P->xent, P->dst->oom, kept);
    ir_value *cls = class_ids(P, op->in[0]->type.dim[ax], q, ax, "classes",
                              "the classes this rank holds");
    ir_value *oh = local_one_hot(P, in[1], cls, IR_F32);
    ir_value *picked = reduce_over(P, row_stat(P, IR_SUM, local(P, IR_MUL, x, oh, NULL, &x->sh),
                                               ax, mask),
                                   mask, IR_RED_SUM, "the label's logit, from the rank holding "
                                   "its class", "label");
    ir_value *lse = local(P, IR_ADD, mx, local(P, IR_LOG, sum, NULL, NULL, &sum->sh), NULL,
                          &sum->sh);
    ir_value *l = local(P, IR_SUB, lse, picked, NULL, &sum->sh);
    /* the rows as one dim, then their mean: this rank's share of the loss */
    ir_sharding rows = replicated();
    rows.partial = (uint16_t)used_axes(q, ax);
    ir_attrs ra = {.nlist = 1, .list = {ir_type_numel(&l->type)}};
    ir_attrs ma = {.axis = 0};
    ir_value *mean = local(P, IR_MEAN, local(P, IR_RESHAPE, l, NULL, &ra, &rows), NULL, &ma,
                           &rows);
    int64_t split = 1;
    for (int d = 0; d < ax; d++)
        split *= ir_sharding_split(q, me, d);
    if (split > 1)
        mean = local(P, IR_MUL, mean, cst(P, 1.0 / (double)split, IR_F32), NULL, &rows);
    P->choice = NULL; /* the rows' sum over the batch axes is no statistic of the split */
    map_result(P, cast_to(P, mean, op->res[0]->type.dtype), &rows);
}

/* embedding(table [V, D], ids): the table whole along V, the ids following
 * the result's leading dims; or, when the table is split along V (the
 * vocabulary) and that moves fewer bytes, each rank looks up the ids in its
 * rows (zeros for the others), a result partial over V's axes, resolved
 * by all_reduce, or reduce_scatter when the result is wanted split. The
 * ids are then whole over those axes. */
static void part_embedding(part *P)
{
    const ir_op *op = P->op;
    const ir_value *lr = op->res[0];
    const ir_mesh *me = &P->dst->mesh;
    int r = lr->type.rank;
    ir_sharding qt = replicated(), qi = replicated(), nat = no_partial(lr->sh);
    copy_dim(&qt, 1, &lr->sh, r - 1);
    for (int d = 0; d < r - 1; d++)
        copy_dim(&qi, d, &lr->sh, d);
    ir_value *ct = P->map[op->in[0]->id], *ci = P->map[op->in[1]->id];
    if (ct->sh.naxes[0]) {
        unsigned mask = dim_mask(&ct->sh, 0);
        ir_sharding st = strip_axes(qt, mask), si = strip_axes(qi, mask);
        ir_sharding sn = strip_axes(nat, mask);
        copy_dim(&st, 0, &ct->sh, 0);
        sn.partial = (uint16_t)mask;
        ir_value t1 = {.type = local_type(me, &lr->type, &nat), .sh = nat};
        ir_value t2 = {.type = local_type(me, &lr->type, &sn), .sh = sn};
        double whole = reshard_cost(P, ct, &qt) + reshard_cost(P, ci, &qi) +
                       reshard_cost(P, &t1, &lr->sh);
        double split = reshard_cost(P, ct, &st) + reshard_cost(P, ci, &si) +
                       reshard_cost(P, &t2, &lr->sh);
        if (split < whole) {
            const char *why = P->choice = split_why(P, "the table split along the vocabulary, rows "
                                        "looked up where they are", split, whole);
            ir_value *table = operand(P, 0, &st, why);
            ir_value *ids = checked_ids(P, IR_CHECK_IDS,
                                        operand(P, 1, &si, "ids whole over the vocabulary's axes"),
                                        op->in[0]->type.dim[0]);
            ir_value *in_range;
            ir_value *cls = class_ids(P, op->in[0]->type.dim[0], &st, 0, "rows",
                                      "the vocabulary rows this rank holds");
            ir_value *rows = local_ids(P, ids, cls, &in_range);
            ir_value *e = local(P, IR_EMBEDDING, table, rows, NULL, &sn);
            map_result(P, local(P, IR_MUL, e, row_mask(P, in_range, e->type.dtype), NULL, &sn),
                       &sn);
            return;
        }
    }
    ir_value *in[2] = {operand(P, 0, &qt, "the embedding table whole along the vocabulary"),
                       operand(P, 1, &qi, "ids follow the result")};
    finish(P, in, 2, &nat);
}

/* embedding_grad(ids, dy) [V, D] with V split over the axes of vmask (0:
 * whole): the rows of dy stay split where they are unless an axis is taken
 * (by D or V), so each rank adds its rows into its table, partial over
 * those axes (the data-parallel gradient sum); D follows the result. */
static void eg_shardings(part *P, unsigned vmask, ir_sharding *qi, ir_sharding *qd,
                         ir_sharding *nat)
{
    const ir_op *op = P->op;
    const ir_value *lr = op->res[0], *ldy = op->in[1];
    int rows = ldy->type.rank - 1;
    const ir_sharding *cur = &P->map[ldy->id]->sh;
    *qd = replicated();
    *qi = replicated();
    *nat = no_partial(lr->sh);
    if (!vmask)
        nat->naxes[0] = 0;
    unsigned taken = used_axes(nat, 2), kept = 0;
    for (int d = 0; d < rows && !cur->partial; d++) {
        bool free_axes = true;
        for (int i = 0; i < cur->naxes[d]; i++)
            free_axes &= !((taken >> cur->axes[d][i]) & 1);
        if (!free_axes)
            continue;
        copy_dim(qd, d, cur, d);
        copy_dim(qi, d, cur, d);
        kept |= used_axes(qd, rows);
    }
    copy_dim(qd, rows, nat, 1);
    nat->partial = (uint16_t)kept;
}

/* embedding_grad: the table gradient whole along V, or, when the result is
 * wanted split along V and that moves no more bytes, each rank adds only
 * the rows in its range (dy whole over V's axes): on a tie too, since the
 * whole table's gradient would be computed on every rank only to be sliced
 * (mesh 1x2: neither moves a byte). */
static void part_embedding_grad(part *P)
{
    const ir_op *op = P->op;
    const ir_value *lr = op->res[0];
    const ir_mesh *me = &P->dst->mesh;
    ir_sharding qi, qd, nat;
    eg_shardings(P, 0, &qi, &qd, &nat);
    unsigned vmask = dim_mask(&lr->sh, 0);
    if (vmask) {
        ir_sharding si, sd, sn;
        eg_shardings(P, vmask, &si, &sd, &sn);
        ir_value *cx = P->map[op->in[0]->id], *cd = P->map[op->in[1]->id];
        ir_value t1 = {.type = local_type(me, &lr->type, &nat), .sh = nat};
        ir_value t2 = {.type = local_type(me, &lr->type, &sn), .sh = sn};
        double whole = reshard_cost(P, cx, &qi) + reshard_cost(P, cd, &qd) +
                       reshard_cost(P, &t1, &lr->sh);
        double split = reshard_cost(P, cx, &si) + reshard_cost(P, cd, &sd) +
                       reshard_cost(P, &t2, &lr->sh);
        if (split <= whole) {
            ir_value *ids = checked_ids(P, IR_CHECK_IDS,
                                        operand(P, 0, &si, "ids whole over the vocabulary's axes"),
                                        lr->type.dim[0]);
            P->choice = split_alt(P, "each rank adds only the rows of its vocabulary range",
                                  split, whole, "for the whole table's gradient");
            ir_value *dy = operand(P, 1, &sd, P->choice);
            ir_value *in_range;
            ir_value *cls = class_ids(P, lr->type.dim[0], &sn, 0, "rows",
                                      "the vocabulary rows this rank holds");
            ir_value *rows = local_ids(P, ids, cls, &in_range);
            ir_sharding dsh = dy->sh;
            dsh.partial |= (uint16_t)vmask;
            ir_value *dym = local(P, IR_MUL, dy, row_mask(P, in_range, dy->type.dtype), NULL,
                                  &dsh);
            ir_attrs a = op->a;
            a.list[0] = t2.type.dim[0];
            a.list[1] = t2.type.dim[1];
            map_result(P, local(P, IR_EMBEDDING_GRAD, rows, dym, &a, &sn), &sn);
            return;
        }
    }
    ir_value *in[2] = {operand(P, 0, &qi, "ids follow the gradient's rows"),
                       operand(P, 1, &qd, "rows stay where they are, summed over ranks after")};
    ir_attrs a = op->a;
    a.list[1] /= ir_sharding_split(&nat, me, 1);
    map_result(P, emit_local(P, IR_EMBEDDING_GRAD, in, 2, &a), &nat);
}

static void part_transpose(part *P)
{
    const ir_op *op = P->op;
    const ir_value *lr = op->res[0];
    ir_sharding q = replicated();
    for (int i = 0; i < op->a.nlist; i++) {
        int d = (int)op->a.list[i];
        copy_dim(&q, d, &lr->sh, i);
    }
    ir_value *x = operand(P, 0, &q, "the operand of transpose follows its result");
    ir_sharding nat = no_partial(lr->sh);
    finish(P, &x, 1, &nat);
}

/* Maps a sharding of `from` onto the reshaped `to`: dims group by equal
 * running products; the axes of a group's first (major) dim carry to the
 * group's first dim when they divide it. False when axes were dropped. */
static bool reshape_map(const ir_mesh *me, const ir_type *from, const ir_type *to,
                        const ir_sharding *s, ir_sharding *out)
{
    *out = replicated();
    bool exact = true;
    int i = 0, o = 0;
    while (i < from->rank || o < to->rank) {
        int i0 = i, o0 = o;
        int64_t pi = i < from->rank ? from->dim[i++] : 1;
        int64_t po = o < to->rank ? to->dim[o++] : 1;
        while (pi != po) {
            if (pi < po && i < from->rank)
                pi *= from->dim[i++];
            else if (o < to->rank)
                po *= to->dim[o++];
            else
                break;
        }
        for (int d = i0 + 1; d < i; d++)
            exact &= s->naxes[d] == 0;
        if (i0 >= i || !s->naxes[i0])
            continue;
        if (o0 < o && to->dim[o0] % axes_size(me, s->axes[i0], s->naxes[i0]) == 0) {
            out->naxes[o0] = s->naxes[i0];
            memcpy(out->axes[o0], s->axes[i0], IR_MAX_AXES);
        } else {
            exact = false;
        }
    }
    return exact;
}

static void part_reshape(part *P)
{
    const ir_op *op = P->op;
    const ir_value *lx = op->in[0], *lr = op->res[0];
    const ir_mesh *me = &P->dst->mesh;
    ir_sharding q, nat;
    reshape_map(me, &lr->type, &lx->type, &lr->sh, &q);
    q = no_partial(q);
    ir_value *x = operand(P, 0, &q, "the operand of reshape follows its result where it can");
    reshape_map(me, &lx->type, &lr->type, &q, &nat);
    nat.kind = IR_SH_AUTO;
    ir_attrs a = op->a;
    for (int d = 0; d < a.nlist; d++) /* the local shape */
        a.list[d] /= ir_sharding_split(&nat, me, d);
    map_result(P, emit_local(P, IR_RESHAPE, &x, 1, &a), &nat);
}

/* The positions among the keys of this rank's query rows, for a causal
 * attention or attn_probs computing on queries [..., S, d] with sharding
 * q (keys [..., T, d] whole along T): where S is split, row i of the
 * rank's block is global row off + i, which sees the keys j <= off + i +
 * T - S (the mask aligned to the end by the global S and T); iota [S]
 * sliced at the rank's coordinate, plus T - S. NULL where S is whole or
 * the op is not causal: the local rows are then the global ones. */
static ir_value *query_pos(part *P, const ir_sharding *q)
{
    const ir_op *op = P->op;
    int r = op->in[0]->type.rank;
    if (!op->a.causal || !q->naxes[r - 2])
        return NULL;
    int64_t s = op->in[0]->type.dim[r - 2], t = op->in[1]->type.dim[r - 2];
    ir_value *pos = class_ids(P, s, q, r - 2, "pos",
                              "the global query rows this rank holds, for the causal mask");
    if (t != s)
        pos = local(P, IR_ADD, pos, cst(P, (double)(t - s), IR_I32), NULL, &pos->sh);
    return pos;
}

/* q, k, v [..., S, d]: batch and head dims follow the result, q's S too
 * (causal: with the global positions of its rows); keys and values whole
 * along T, every head dim whole. */
static void part_attention(part *P)
{
    const ir_op *op = P->op;
    const ir_value *lr = op->res[0];
    int r = lr->type.rank;
    ir_sharding q = clear_dim(no_partial(lr->sh), r - 1);
    ir_sharding kv = clear_dim(q, r - 2);
    ir_value *in[4] = {operand(P, 0, &q, "queries follow the result"),
                       operand(P, 1, &kv, "keys whole along the sequence"),
                       operand(P, 2, &kv, "values whole along the sequence"),
                       query_pos(P, &q)};
    finish(P, in, in[3] ? 4 : 3, &q);
}

/* mse: both operands as pred is; the local mean scaled to its share, then
 * summed over the ranks that split pred. cross_entropy likewise over rows,
 * with the class dim whole. */
static void part_loss(part *P)
{
    const ir_op *op = P->op;
    const ir_value *lp = op->in[0];
    const ir_mesh *me = &P->dst->mesh;
    ir_sharding qp = no_partial(P->map[lp->id]->sh), ql = replicated();
    int rows_rank = lp->type.rank;
    const char *why = NULL;
    if (op->code == IR_XENT) {
        ir_sharding q = norm_choice(P, lp->type.rank - 1, &why);
        if (q.naxes[lp->type.rank - 1]) {
            part_xent_split(P, &q, why);
            return;
        }
        qp = clear_dim(qp, lp->type.rank - 1);
        rows_rank = lp->type.rank - 1;
        for (int d = 0; d < rows_rank; d++)
            copy_dim(&ql, d, &qp, d);
    } else {
        ql = qp;
    }
    ir_value *in[2] = {operand(P, 0, &qp, why ? why : "the loss's operands stay where they are"),
                       operand(P, 1, &ql, "the loss's operands line up")};
    ir_sharding nat = replicated();
    int64_t split = 1;
    for (int d = 0; d < rows_rank; d++)
        split *= ir_sharding_split(&qp, me, d);
    nat.partial = (uint16_t)used_axes(&qp, rows_rank);
    if (split > 1)
        finish_scaled(P, in, 2, &nat, 1.0 / (double)split);
    else
        finish(P, in, 2, &nat);
}

/* expand: the operand's full-size dims follow the result; the local op
 * expands to the local shape. */
static void part_expand(part *P)
{
    const ir_op *op = P->op;
    const ir_value *lr = op->res[0];
    ir_sharding q = project(&lr->sh, &lr->type, &op->in[0]->type), nat = no_partial(lr->sh);
    ir_value *x = operand(P, 0, &q, "the operand of expand follows its result");
    ir_attrs a = op->a;
    for (int d = 0; d < a.nlist; d++)
        a.list[d] /= ir_sharding_split(&nat, &P->dst->mesh, d);
    map_result(P, emit_local(P, IR_EXPAND, &x, 1, &a), &nat);
}

/* attn_probs(q, k) [..., S, T]: as attention, keys whole along T. */
static void part_attn_probs(part *P)
{
    const ir_op *op = P->op;
    const ir_value *lr = op->res[0];
    int r = lr->type.rank;
    ir_sharding nat = clear_dim(no_partial(lr->sh), r - 1);
    ir_sharding q = nat, k = clear_dim(nat, r - 2);
    ir_value *in[3] = {operand(P, 0, &q, "queries follow the result"),
                       operand(P, 1, &k, "keys whole along the sequence"), query_pos(P, &q)};
    finish(P, in, in[2] ? 3 : 2, &nat);
}

static void part_source(part *P)
{
    const ir_op *op = P->op;
    const ir_value *lr = op->res[0];
    ir_type t = local_type(&P->dst->mesh, &lr->type, &lr->sh);
    ir_op *d = ir_append(P->dst, op->code, NULL, 0, &op->a, &t);
    d->loc = op->loc;
    d->rep = op->rep;
    d->phase = op->phase;
    d->res[0]->name = lr->name;
    d->res[0]->sh = lr->sh;
    P->map[lr->id] = d->res[0];
}

/* iota: made whole, then resharded to its value's sharding. */
static void part_iota(part *P)
{
    ir_sharding rep = replicated();
    map_result(P, local(P, IR_IOTA, NULL, NULL, &P->op->a, &rep), &rep);
}

static void part_op(part *P)
{
    const ir_op *op = P->op;
    P->choice = NULL;
    switch (ir_ops[op->code].cls) {
    case IR_C_SOURCE: part_source(P); return;
    case IR_C_BINARY: part_elementwise(P); return;
    case IR_C_UNARY: part_elementwise(P); return;
    case IR_C_CONTRACT:
        if (op->code == IR_MATMUL)
            part_matmul(P);
        else if (op->code == IR_ATTN_PROBS)
            part_attn_probs(P);
        else
            part_attention(P);
        return;
    case IR_C_OPTIM: part_elementwise(P); return;
    case IR_C_REDUCE: part_reduce(P); return;
    case IR_C_NORM: part_norm(P); return;
    case IR_C_LOSS: part_loss(P); return;
    case IR_C_LAYOUT:
        switch (op->code) {
        case IR_TRANSPOSE: part_transpose(P); return;
        case IR_RESHAPE: part_reshape(P); return;
        case IR_EMBEDDING: part_embedding(P); return;
        case IR_EXPAND: part_expand(P); return;
        case IR_EMBEDDING_GRAD: part_embedding_grad(P); return;
        case IR_XENT_GRAD: part_xent_grad(P); return;
        case IR_IOTA: part_iota(P); return;
        case IR_CONSTRAIN: {
            ir_value *v = operand(P, 0, &op->res[0]->sh, "a sharding constraint");
            if (v != P->map[op->in[0]->id] && !v->name) /* the constraint's own value */
                v->name = op->res[0]->name;
            P->map[op->res[0]->id] = v;
            return;
        }
        default: break;
        }
        break;
    case IR_C_COMM:
    case IR_C_P2P:
        break;
    }
    su_unreachable(); /* logical modules hold no collectives, slices, sends or recvs */
}

/* The partitioning of m into P->dst; false when an op has no sharding. */
typedef struct part_run {
    part P;
    const ir_module *m;
    const char ***why;
    su_buf *err;
    bool ok;
} part_run;

static void partition(void *arg)
{
    part_run *r = arg;
    part *P = &r->P;
    const ir_module *m = r->m;
    P->map = su_alloc(&P->dst->arena, (size_t)(m->next_id + 1) * sizeof *P->map);
    P->made_first = su_alloc(&P->dst->arena, (size_t)(m->next_id + 1) * sizeof *P->made_first);
    for (int i = 0; i <= m->next_id; i++)
        P->made_first[i] = -1;
    for (int i = 0; i < m->ops.n; i++) {
        P->op = IR_OP(m, i);
        for (int j = 0; j < P->op->nres; j++)
            if (P->op->res[j]->sh.kind == IR_SH_NONE) {
                su_buf_printf(r->err, "op %d (%s) has a result without a sharding; run "
                              "propagation first", i, ir_ops[P->op->code].name);
                return;
            }
        part_op(P);
    }
    for (int i = 0; i < m->outputs.n; i++)
        ir_add_output(P->dst, IR_OUTPUT(m, i)->name, P->map[IR_OUTPUT(m, i)->v->id],
                      IR_OUTPUT(m, i)->loc);
    for (int i = 0; i < m->updates.n; i++) {
        const ir_update *u = IR_UPDATE(m, i);
        P->op = u->v->def; /* the new value takes the old one's layout */
        P->need = "an update keeps the layout of what it updates";
        ir_value *v = reshard(P, P->map[u->v->id], &u->src->sh);
        P->need = NULL;
        ir_add_update(P->dst, P->map[u->src->id], v, u->grad ? P->map[u->grad->id] : NULL);
    }
    P->dst->train = m->train;
    if (m->train.loss)
        P->dst->train.loss = P->map[m->train.loss->id];
    pass_combine_sums(P->dst, &P->why);
    if (r->why) {
        const char **w = su_alloc(&P->dst->arena, (size_t)(P->dst->next_id + 1) * sizeof *w);
        for (int i = 0; i < P->why.n; i++)
            w[i] = P->why.v[i];
        *r->why = w;
    }
    r->ok = true;
}

bool pass_partition(const ir_module *m, const pass_explain *ex, ir_module **out,
                    const char ***why, su_buf *err)
{
    if (m->partitioned) {
        su_buf_puts(err, "the module is already partitioned");
        return false;
    }
    part_run r = {.m = m, .why = why, .err = err};
    r.P = (part){.ex = ex, .zero3_axis = m->train.zero == 3 ? m->train.zero_axis : -1};
    /* *out is the caller's from here, to free after an allocation failure */
    *out = r.P.dst = ir_module_new(m->oom);
    r.P.dst->mesh = m->mesh;
    r.P.dst->partitioned = true;
    r.P.dst->pipe = m->pipe;
    bool done = su_guarded(m->oom, partition, &r);
    su_vec_free(&r.P.why);
    su_vec_free(&r.P.made);
    su_vec_free(&r.P.xent);
    if (!done)
        su_oom(m->oom);
    if (!r.ok) {
        ir_module_free(r.P.dst);
        *out = NULL;
    }
    return r.ok;
}
