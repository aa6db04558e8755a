/* partition_reshard.c: values between layouts, for the SPMD partitioning
 * (partition.h): the shardings' arithmetic, the collectives and slices
 * that take a value from its layout to the one an op needs (each step the
 * cheapest; an operand resharded once per layout, phase and repetition),
 * and the local op emitted with its result brought to its assigned
 * sharding. */
#include "partition.h"

#include <stdio.h>
#include <string.h>

/* An operand resharded for an op: another op of the same repetition and
 * phase that needs the same logical value in the same layout reads it
 * rather than resharding again (the value gathered once for q, k and v).
 * Across phases it is resharded again, as Megatron-LM does: a gathered
 * activation is not kept from the forward to the backward, unless
 * keep_gathered (shardc --keep-gathered) says to (activations only: a
 * param ZeRO-3 gathers is gathered again). */
typedef struct reshard_made {
    const ir_value *from;   /* the logical value */
    ir_sharding to;
    int rep;
    uint8_t phase;
    bool sent;              /* a collective made it (not only slices or constrains) */
    ir_value *v;            /* its local value in that layout */
    int next;               /* the next in made for the same value (-1: none) */
} reshard_made;

/* ---- shardings ---- */

ir_sharding pass_part_replicated(void)
{
    return (ir_sharding){.kind = IR_SH_AUTO};
}

int64_t pass_part_axes_size(const ir_mesh *me, const uint8_t *axes, int n)
{
    int64_t s = 1;
    for (int i = 0; i < n; i++)
        s *= me->size[axes[i]];
    return s;
}

unsigned pass_part_used_axes(const ir_sharding *s, int rank)
{
    unsigned m = 0;
    for (int d = 0; d < rank; d++)
        for (int i = 0; i < s->naxes[d]; i++)
            m |= 1u << s->axes[d][i];
    return m;
}

ir_type pass_part_local_type(const ir_mesh *me, const ir_type *t, const ir_sharding *s)
{
    ir_type l = *t;
    for (int d = 0; d < t->rank; d++)
        l.dim[d] /= ir_sharding_split(s, me, d);
    return l;
}

ir_sharding pass_part_no_partial(ir_sharding s)
{
    s.partial = 0;
    s.kind = IR_SH_AUTO;
    return s;
}

/* dst's dim dd takes src's dim sd's axes. */
void pass_part_copy_dim(ir_sharding *dst, int dd, const ir_sharding *src, int sd)
{
    if (dd < 0 || dd >= IR_MAX_RANK || sd < 0 || sd >= IR_MAX_RANK)
        su_unreachable();
    dst->naxes[dd] = src->naxes[sd];
    memcpy(dst->axes[dd], src->axes[sd], IR_MAX_AXES);
}

/* s without the axes in mask, in every dim. */
ir_sharding pass_part_strip_axes(ir_sharding s, unsigned mask)
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
ir_sharding pass_part_clear_dim(ir_sharding s, int d)
{
    s.naxes[d] = 0;
    return s;
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
ir_value *pass_part_comm_red(part *P, ir_opcode code, ir_value *v, int dim, int dim2,
                             const uint8_t *axes, int naxes, const ir_sharding *sh, ir_reduce red)
{
    ir_attrs a = {.dim = dim, .dim2 = dim2, .naxes = naxes, .reduce = (uint8_t)red};
    memcpy(a.axes, axes, (size_t)naxes);
    const ir_type *tin = &v->type;
    ir_type out;
    char err[256];
    if (!ir_infer(&P->dst->mesh, code, &tin, 1, &a, &out, err, sizeof err))
        su_unreachable(); /* shapes follow from valid shardings */
    int64_t n = pass_part_axes_size(&P->dst->mesh, axes, naxes);
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
    if (!P->ex) /* no reasons kept */
        return r;
    char from[128], to[128];
    sh_text(from, sizeof from, P->dst, &v->sh, v->type.rank);
    sh_text(to, sizeof to, P->dst, sh, v->type.rank);
    set_why(P, r, su_sprintf(&P->dst->arena, "%s%s %s -> %s for %s (%s)",
                             red == IR_RED_MAX ? "max of " : "", vname(P, v), from, to,
                             ir_ops[P->op->code].name, P->need ? P->need : "its operand"));
    return r;
}

ir_value *pass_part_comm(part *P, ir_opcode code, ir_value *v, int dim, int dim2,
                         const uint8_t *axes, int naxes, const ir_sharding *sh)
{
    return pass_part_comm_red(P, code, v, dim, dim2, axes, naxes, sh, IR_RED_SUM);
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
        if (!n || v->type.dim[d] % pass_part_axes_size(&P->dst->mesh, run, n))
            continue;
        for (int i = 0; i < n; i++) {
            cur.axes[d][cur.naxes[d]++] = run[i];
            cur.partial &= (uint16_t)~(1u << run[i]);
        }
        v = pass_part_comm(P, IR_REDUCE_SCATTER, v, d, 0, run, n, &cur);
        break;
    }
    if (cur.partial) {
        uint8_t axes[IR_MAX_AXES];
        int n = 0;
        for (int a = 0; a < P->dst->mesh.naxes; a++)
            if (cur.partial & (1u << a))
                axes[n++] = (uint8_t)a;
        cur.partial = 0;
        v = pass_part_comm(P, IR_ALL_REDUCE, v, 0, 0, axes, n, &cur);
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
        return pass_part_comm(P, IR_ALL_TO_ALL, v, d2, d, &a, 1, &cur);
    }
    uint8_t tail[IR_MAX_AXES];
    int n = cur.naxes[d] - k;
    memcpy(tail, &cur.axes[d][k], (size_t)n);
    cur.naxes[d] = (uint8_t)k;
    return pass_part_comm(P, IR_ALL_GATHER, v, d, 0, tail, n, &cur);
}

/* Adds to dim d the next required axes that no dim holds, by a slice. */
static ir_value *grow_dim(part *P, ir_value *v, const ir_sharding *req, int d, bool *done)
{
    ir_sharding cur = v->sh;
    unsigned used = pass_part_used_axes(&cur, v->type.rank);
    uint8_t run[IR_MAX_AXES];
    int n = 0;
    for (int k = cur.naxes[d]; k < req->naxes[d] && !(used & (1u << req->axes[d][k])); k++)
        run[n++] = req->axes[d][k];
    if (!n)
        return v;
    for (int i = 0; i < n; i++)
        cur.axes[d][cur.naxes[d]++] = run[i];
    *done = false;
    return pass_part_comm(P, IR_SLICE, v, d, 0, run, n, &cur);
}

/* v with sharding req (not partial), by the steps above in a loop: each
 * step brings one dim closer, so it ends. */
ir_value *pass_part_reshard(part *P, ir_value *v, const ir_sharding *req)
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
double pass_part_reshard_cost(part *P, ir_value *v, const ir_sharding *req)
{
    bool dry = P->dry;
    double before = P->bytes;
    P->dry = true;
    pass_part_reshard(P, v, req);
    double cost = P->bytes - before;
    P->bytes = before;
    P->dry = dry;
    return cost;
}

/* lv resharded to req for this phase and repetition (with keep_gathered,
 * a backward op also finds the forward's), or NULL. */
static ir_value *made_find(const part *P, const ir_value *lv, const ir_sharding *req)
{
    for (int k = P->made_first[P->same[lv->id]]; k >= 0; k = ((reshard_made *)P->made.v[k])->next) {
        const reshard_made *r = P->made.v[k];
        bool ph = r->phase == P->op->phase ||
                  (P->keep_gathered && r->sent && r->phase == IR_PH_FORWARD &&
                   P->op->phase == IR_PH_BACKWARD && P->act[lv->id]);
        if (r->rep == P->op->rep && ph && r->to.partial == req->partial &&
            ir_sharding_eq(&r->to, req, lv->type.rank))
            return r->v;
    }
    return NULL;
}

/* Records that lv's local value from, resharded to req, is v. */
static void made_add(part *P, const ir_value *lv, const ir_sharding *req, const ir_value *from,
                     ir_value *v)
{
    bool sent = false; /* the reshard's ops, from v back to from */
    for (const ir_value *w = v; w != from && w->def && w->def->nin > 0; w = w->def->in[0])
        sent |= ir_ops[w->def->code].cls == IR_C_COMM;
    int id = P->same[lv->id];
    reshard_made *r = su_alloc(&P->dst->arena, sizeof *r);
    *r = (reshard_made){lv, *req, P->op->rep, P->op->phase, sent, v, P->made_first[id]};
    P->made_first[id] = P->made.n;
    su_vec_push(&P->made, P->dst->oom, r);
}

/* Operand i of P->op already resharded to req, or NULL. With
 * keep_gathered, a backward transpose of a forward activation (the
 * weight gradient's x^T) is found as the activation the forward gathered,
 * transposed locally: emitted where emit, else that activation itself is
 * returned, to say there is one. */
static ir_value *made_as(part *P, int i, const ir_sharding *req, bool emit)
{
    const ir_value *lv = P->op->in[i], *cur = P->map[lv->id];
    if (cur->sh.partial == req->partial && ir_sharding_eq(&cur->sh, req, lv->type.rank))
        return NULL; /* there already */
    ir_value *v = made_find(P, lv, req);
    if (v || !P->keep_gathered || P->op->phase != IR_PH_BACKWARD || !lv->def ||
        lv->def->code != IR_TRANSPOSE || lv->def->phase != IR_PH_BACKWARD)
        return v;
    const ir_op *t = lv->def;
    ir_sharding q = pass_part_replicated();
    q.partial = req->partial;
    for (int k = 0; k < t->a->nlist; k++)
        pass_part_copy_dim(&q, (int)t->a->list[k], req, k);
    ir_value *x = made_find(P, t->in[0], &q);
    if (!x || !emit)
        return x;
    v = pass_part_emit_local(P, IR_TRANSPOSE, &x, 1, t->a);
    v->sh = *req;
    v->sh.kind = lv->sh.kind;
    made_add(P, lv, req, x, v); /* sent nothing: found by this phase only */
    return v;
}

double pass_part_operand_cost(part *P, int i, const ir_sharding *req)
{
    if (made_as(P, i, req, false))
        return 0;
    return pass_part_reshard_cost(P, P->map[P->op->in[i]->id], req);
}

ir_value *pass_part_operand(part *P, int i, const ir_sharding *req, const char *need)
{
    const ir_value *lv = P->op->in[i];
    const char *why = P->ex && lv->id < P->ex->nvalues ? P->ex->why[lv->id] : NULL;
    if (why) /* the rule or annotation behind the operand's sharding */
        need = su_sprintf(&P->dst->arena, "%s; %s has its sharding by: %s", need,
                          lname(P, lv), why);
    ir_value *made = made_as(P, i, req, true);
    if (made)
        return made;
    P->need = need;
    ir_value *from = P->map[lv->id], *v = pass_part_reshard(P, from, req);
    P->need = NULL;
    if (v != from && !P->dry)
        made_add(P, lv, req, from, v);
    return v;
}

/* ---- local ops ---- */

/* Emits the local op of P->op on local operands; its result has sharding
 * natural (possibly partial); maps the logical result to it resharded to
 * the assigned sharding. */
ir_value *pass_part_emit_local(part *P, ir_opcode code, ir_value **in, int nin,
                               const ir_attrs *attrs)
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
void pass_part_map_result(part *P, ir_value *r, const ir_sharding *natural)
{
    const ir_value *lr = P->op->res[0];
    r->name = lr->name;
    r->sh = *natural;
    r->sh.kind = lr->sh.kind;
    const char *why = P->ex && lr->id < P->ex->nvalues ? P->ex->why[lr->id] : NULL;
    P->need = why ? su_sprintf(&P->dst->arena, "the result's sharding, by: %s", why)
                  : "the result's sharding";
    if (P->choice && P->ex)
        P->need = su_sprintf(&P->dst->arena, "%s; %s", P->need, P->choice);
    ir_value *v = pass_part_reshard(P, r, &lr->sh);
    if (v != r) { /* the name goes to the value that holds the result */
        v->name = lr->name;
        r->name = NULL;
    }
    P->map[lr->id] = v;
    P->need = NULL;
}

void pass_part_finish(part *P, ir_value **in, int nin, const ir_sharding *natural)
{
    pass_part_map_result(P, pass_part_emit_local(P, P->op->code, in, nin, P->op->a), natural);
}

/* As pass_part_finish, multiplying the local result by scale: a mean over
 * a share of the elements becomes that share's part of the global mean. */
void pass_part_finish_scaled(part *P, ir_value **in, int nin, const ir_sharding *natural,
                             double scale)
{
    ir_value *r = pass_part_emit_local(P, P->op->code, in, nin, P->op->a);
    ir_type st = {.dtype = r->type.dtype};
    ir_attrs ca = {.value = scale};
    ir_op *c = ir_append(P->dst, IR_CONST, NULL, 0, &ca, &st);
    c->loc = P->op->loc;
    c->rep = P->op->rep;
    c->phase = P->op->phase;
    c->res[0]->sh = pass_part_replicated();
    ir_value *m[2] = {r, c->res[0]};
    pass_part_map_result(P, pass_part_emit_local(P, IR_MUL, m, 2, &(ir_attrs){0}), natural);
}
