/* partition.c: SPMD partitioning (DESIGN.md §3.4). Each logical op becomes
 * its local op on local shapes; operands are resharded to what the op needs
 * with the cheapest collectives; partial results are resolved to the value's
 * assigned sharding. The result is one program for every rank, with the
 * rank's coordinates as implicit parameters of slices and collectives. */
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
    int zero3_axis;         /* zero 3: params' storage axis, never contracted; -1 */
    bool dry;               /* count bytes, emit nothing */
    double bytes;           /* bytes sent per rank, while dry */
} part;

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

/* A collective or slice of v over axes, whose result has sharding sh.
 * While dry, only counts bytes and returns a stand-in value. */
static ir_value *comm(part *P, ir_opcode code, ir_value *v, int dim, int dim2,
                      const uint8_t *axes, int naxes, const ir_sharding *sh)
{
    ir_attrs a = {.dim = dim, .dim2 = dim2, .naxes = naxes};
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
    set_why(P, r, su_sprintf(&P->dst->arena, "%s %s -> %s for %s (%s)", vname(P, v), from, to,
                             ir_ops[P->op->code].name, P->need ? P->need : "its operand"));
    return r;
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
    P->need = need;
    ir_value *v = reshard(P, P->map[P->op->in[i]->id], req);
    P->need = NULL;
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

/* sum/mean over a split dim stay local and give a partial result (mean
 * scaled by the local share), resolved after; unless moving the operand's
 * split elsewhere first costs less. amax needs the dim whole. */
static void part_reduce(part *P)
{
    const ir_op *op = P->op;
    const ir_value *lx = op->in[0], *lr = op->res[0];
    int ax = (int)op->a.axis;
    ir_value *cx = P->map[lx->id];
    const ir_sharding *cur = &cx->sh;
    ir_sharding req, nat, kreq, knat;
    reduce_as(op, cur, false, &req, &nat);
    bool keep = op->code != IR_AMAX && cur->naxes[ax] && !cur->partial;
    if (keep) { /* by the bytes moved before and after, the whole dim on a tie */
        reduce_as(op, cur, true, &kreq, &knat);
        ir_value t1 = {.type = local_type(&P->dst->mesh, &lr->type, &nat), .sh = nat};
        ir_value t2 = {.type = local_type(&P->dst->mesh, &lr->type, &knat), .sh = knat};
        double whole = reshard_cost(P, cx, &req) + reshard_cost(P, &t1, &lr->sh);
        double split = reshard_cost(P, cx, &kreq) + reshard_cost(P, &t2, &lr->sh);
        keep = split <= whole;
        if (keep)
            req = kreq, nat = knat;
    }
    ir_value *x = operand(P, 0, &req, keep ? "reduced locally, then summed over ranks"
                                           : "the reduced dim whole");
    if (op->code == IR_MEAN && keep) {
        /* the local mean is over a share of the dim: scale by that share */
        int64_t n = axes_size(&P->dst->mesh, cur->axes[ax], cur->naxes[ax]);
        finish_scaled(P, &x, 1, &nat, 1.0 / (double)n);
        return;
    }
    finish(P, &x, 1, &nat);
}

/* softmax, layernorm, rmsnorm: computed with the normalised dim whole; a
 * result wanted split there is sliced afterwards. */
static void part_norm(part *P)
{
    const ir_op *op = P->op;
    const ir_value *lr = op->res[0];
    int ax = op->code == IR_SOFTMAX ? (int)op->a.axis : lr->type.rank - 1;
    ir_sharding q = clear_dim(no_partial(lr->sh), ax), rep = replicated();
    ir_value *in[3];
    in[0] = operand(P, 0, &q, "the normalised dim whole");
    for (int i = 1; i < op->nin; i++)
        in[i] = operand(P, i, &rep, "gains and biases whole");
    finish(P, in, op->nin, &q);
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

/* table [V, D] whole along V; ids follow the result's leading dims. */
static void part_embedding(part *P)
{
    const ir_op *op = P->op;
    const ir_value *lr = op->res[0];
    int r = lr->type.rank;
    ir_sharding qt = replicated(), qi = replicated(), nat = no_partial(lr->sh);
    copy_dim(&qt, 1, &lr->sh, r - 1);
    for (int d = 0; d < r - 1; d++)
        copy_dim(&qi, d, &lr->sh, d);
    ir_value *in[2] = {operand(P, 0, &qt, "the embedding table whole along the vocabulary"),
                       operand(P, 1, &qi, "ids follow the result")};
    finish(P, in, 2, &nat);
}

/* q, k, v [..., S, d]: batch and head dims follow the result, q's S too;
 * keys and values whole along T, every head dim whole. */
static void part_attention(part *P)
{
    const ir_op *op = P->op;
    const ir_value *lr = op->res[0];
    int r = lr->type.rank;
    ir_sharding q = clear_dim(no_partial(lr->sh), r - 1);
    ir_sharding kv = clear_dim(q, r - 2);
    ir_value *in[3] = {operand(P, 0, &q, "queries follow the result"),
                       operand(P, 1, &kv, "keys whole along the sequence"),
                       operand(P, 2, &kv, "values whole along the sequence")};
    finish(P, in, 3, &q);
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
    if (op->code == IR_XENT) {
        qp = clear_dim(qp, lp->type.rank - 1);
        rows_rank = lp->type.rank - 1;
        for (int d = 0; d < rows_rank; d++)
            copy_dim(&ql, d, &qp, d);
    } else {
        ql = qp;
    }
    ir_value *in[2] = {operand(P, 0, &qp, "the loss's operands stay where they are"),
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
    ir_value *in[2] = {operand(P, 0, &q, "queries follow the result"),
                       operand(P, 1, &k, "keys whole along the sequence")};
    finish(P, in, 2, &nat);
}

/* embedding_grad(ids, dy) [V, D]: rows of dy stay split where they are, so
 * each rank adds its rows into a whole table, partial over those axes (the
 * data-parallel gradient sum); D follows the result. */
static void part_embedding_grad(part *P)
{
    const ir_op *op = P->op;
    const ir_value *lr = op->res[0], *ldy = op->in[1];
    int rows = ldy->type.rank - 1;
    const ir_sharding *cur = &P->map[ldy->id]->sh;
    ir_sharding qd = replicated(), qi = replicated(), nat = no_partial(lr->sh);
    nat.naxes[0] = 0;
    unsigned taken = used_axes(&nat, 2), kept = 0;
    for (int d = 0; d < rows && !cur->partial; d++) {
        bool free_axes = true;
        for (int i = 0; i < cur->naxes[d]; i++)
            free_axes &= !((taken >> cur->axes[d][i]) & 1);
        if (!free_axes)
            continue;
        copy_dim(&qd, d, cur, d);
        copy_dim(&qi, d, cur, d);
        kept |= used_axes(&qd, rows);
    }
    copy_dim(&qd, rows, &nat, 1);
    nat.partial = (uint16_t)kept;
    ir_value *in[2] = {operand(P, 0, &qi, "ids follow the gradient's rows"),
                       operand(P, 1, &qd, "rows stay where they are, summed over ranks after")};
    ir_attrs a = op->a;
    a.list[1] /= ir_sharding_split(&nat, &P->dst->mesh, 1);
    map_result(P, emit_local(P, IR_EMBEDDING_GRAD, in, 2, &a), &nat);
}

/* cross_entropy_grad(logits, labels): rows follow the result, the class
 * dim whole (sliced after when the result wants it split). */
static void part_xent_grad(part *P)
{
    const ir_op *op = P->op;
    const ir_value *lr = op->res[0];
    int r = lr->type.rank;
    ir_sharding nat = clear_dim(no_partial(lr->sh), r - 1), ql = replicated();
    for (int d = 0; d + 1 < r; d++)
        copy_dim(&ql, d, &nat, d);
    ir_value *in[2] = {operand(P, 0, &nat, "logits whole along the classes"),
                       operand(P, 1, &ql, "labels follow the rows")};
    finish(P, in, 2, &nat);
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

static void part_op(part *P)
{
    const ir_op *op = P->op;
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

bool pass_partition(const ir_module *m, const pass_explain *ex, ir_module **out,
                    const char ***why, su_buf *err)
{
    if (m->partitioned) {
        su_buf_puts(err, "the module is already partitioned");
        return false;
    }
    part P = {.ex = ex, .zero3_axis = m->train.zero == 3 ? m->train.zero_axis : -1};
    P.dst = ir_module_new(m->oom);
    P.dst->mesh = m->mesh;
    P.dst->partitioned = true;
    P.dst->pipe = m->pipe;
    P.map = su_alloc(&P.dst->arena, (size_t)(m->next_id + 1) * sizeof *P.map);
    for (int i = 0; i < m->ops.n; i++) {
        P.op = IR_OP(m, i);
        for (int j = 0; j < P.op->nres; j++)
            if (P.op->res[j]->sh.kind == IR_SH_NONE) {
                su_buf_printf(err, "op %d (%s) has a result without a sharding; run "
                              "propagation first", i, ir_ops[P.op->code].name);
                su_vec_free(&P.why);
                ir_module_free(P.dst);
                return false;
            }
        part_op(&P);
    }
    for (int i = 0; i < m->outputs.n; i++)
        ir_add_output(P.dst, IR_OUTPUT(m, i)->name, P.map[IR_OUTPUT(m, i)->v->id],
                      IR_OUTPUT(m, i)->loc);
    for (int i = 0; i < m->updates.n; i++) {
        const ir_update *u = IR_UPDATE(m, i);
        P.op = u->v->def; /* the new value takes the old one's layout */
        P.need = "an update keeps the layout of what it updates";
        ir_value *v = reshard(&P, P.map[u->v->id], &u->src->sh);
        P.need = NULL;
        ir_add_update(P.dst, P.map[u->src->id], v, u->grad ? P.map[u->grad->id] : NULL);
    }
    P.dst->train = m->train;
    if (m->train.loss)
        P.dst->train.loss = P.map[m->train.loss->id];
    if (why) {
        const char **w = su_alloc(&P.dst->arena, (size_t)(P.dst->next_id + 1) * sizeof *w);
        for (int i = 0; i < P.why.n; i++)
            w[i] = P.why.v[i];
        *why = w;
    }
    su_vec_free(&P.why);
    *out = P.dst;
    return true;
}
