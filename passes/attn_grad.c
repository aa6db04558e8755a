/* attn_grad.c: attention's backward without the [S, T] probabilities
 * (DESIGN.md §3.4; ops.def's attn_stats, attn_dq, attn_dk, attn_dv).
 *
 * Autodiff writes attention's gradient from its recomputed probabilities
 * (autodiff.c, grad_attention), per leading index:
 *   p  = attn_probs(q, k[, pos])              [S, T]
 *   dv = transpose(p) @ dy                    (when v needs a gradient)
 *   gp = dy @ transpose(v)                    [S, T]
 *   gs = p * (gp - sum(gp * p, last, keepdims))
 *   dq = (gs @ k) * c,  dk = (transpose(gs) @ q) * c,  c = 1 / sqrt(d)
 * which keeps four [S, T] values live at once and runs eleven kernels.
 * Here, on each rank's local program after partitioning (so every
 * collective the partitioner placed stays where it is, and a partial dk or
 * dv, queries split along S, stays partial for its collective), that form
 * becomes
 *   st = attn_stats(q, k, v, dy[, pos])       [S, 2]: log-sum-exp, delta
 *   dq = attn_dq(q, k, v, dy, st[, pos]), dk = attn_dk(...), dv = attn_dv(q, k, dy, st[, pos])
 * which recompute each score where they need it (flash attention's
 * backward): no value of the backward grows with S T. Where the program
 * holds the forward, y = attention(q, k, v[, pos]) with the form's own
 * operands (positions made alike will do) and flags before the backward,
 * the statistics come from it
 * instead, and no kernel runs the scores a third time for them:
 *   lse = attn_lse(q, k[, pos])               [S], right after the forward
 *                                             (one kernel with it on a GPU)
 *   st = attn_delta(y, dy, lse)               [S, 2]: lse, sum_c y dy
 * (delta = sum_j p_ij dp_ij = dy_i . (p v)_i). Where y's one reader turns
 * its heads inner ([.., H, S, d] -> [.., S, H, d], the transpose fold.c
 * folds into attention) and dy is the same transpose of some g, attn_delta
 * reads that transpose's result and g with heads_inner, so that neither
 * transpose is kept for it. The rewritten ops
 * keep their results (value, name, sharding); p, gp, gs and the rest are
 * dropped. The form is matched exactly: each intermediate read by nothing
 * else, the same q, k and dy throughout, the scale 1 / sqrt(d) (to the
 * dtype's rounding), and a head of width at most AT_MAX_WIDTH, the widest
 * the CUDA backend's kernels take (codegen/cuda_ops.c). Two forms of the
 * partitioner's are matched too: v^T made by a gather, slice or
 * all-to-all of v's transpose (layout_of: context parallelism gathers v's
 * transposed shard; a value whose heads are sliced as the queries' are
 * split; Ulysses' sequence parallelism turns v's transposed shard from
 * split sequence to split heads), where v is then made by the same op of
 * v (relayout); and dk summed over ranks before its scale (sum_of), where
 * attn_dk takes the matmul's place and the sum reads it. Anything else
 * (v's width split so that gp is partial and reduced, say) keeps
 * autodiff's form, which computes the same values. */
#include "passes.h"
#include "fuse.h"

#include <math.h>
#include <string.h>

enum { AT_MAX_WIDTH = PASS_ATTN_MAX_WIDTH };

typedef struct ag {
    ir_module *m;
    int *uses;       /* by value id: how many reads */
    ir_op **reader;  /* by value id: the last op that reads it */
    int *at;         /* by op's first result id: its index in the program */
} ag;

/* The op that makes v when it is code and read only where the pattern
 * reads it (uses reads), else NULL. */
static ir_op *def_of(const ag *G, const ir_value *v, ir_opcode code, int uses)
{
    ir_op *d = v ? v->def : NULL;
    return d && d->code == code && G->uses[v->id] == uses ? d : NULL;
}

/* The only reader of v when it is code, else NULL. */
static ir_op *only_reader(const ag *G, const ir_value *v, ir_opcode code)
{
    ir_op *r = G->uses[v->id] == 1 ? G->reader[v->id] : NULL;
    return r && r->code == code ? r : NULL;
}

/* Whether t swaps the last two dims of a value of rank r. */
static bool swaps_last(const ir_op *t, int r)
{
    if (t->code != IR_TRANSPOSE || t->a->nlist != r)
        return false;
    for (int i = 0; i < r; i++)
        if (t->a->list[i] != (i == r - 2 ? r - 1 : i == r - 1 ? r - 2 : i))
            return false;
    return true;
}

/* The other operand of binary op b, one of whose operands is x; NULL when
 * neither is. */
static ir_value *other(const ir_op *b, const ir_value *x)
{
    return b->in[0] == x ? b->in[1] : b->in[1] == x ? b->in[0] : NULL;
}

/* Whether mul op s scales its operand x by the constant 1 / sqrt(d) (to
 * the dtype's rounding: bf16 keeps 8 bits), read by nothing else. */
static bool scales(const ag *G, const ir_op *s, const ir_value *x, int64_t d)
{
    if (!s || s->code != IR_MUL)
        return false;
    const ir_value *c = other(s, x);
    if (!c || !c->def || c->def->code != IR_CONST || c->type.rank != 0 || G->uses[c->id] != 1)
        return false;
    double want = 1.0 / sqrt((double)d);
    return fabs(c->def->a->value - want) <= 1.0 / 128 * want;
}

/* The index in the program of op o (which makes a value). */
static int at_of(const ag *G, const ir_op *o)
{
    return G->at[o->res[0]->id];
}

/* The dim of a value of rank r that is dim d of its transpose swapping
 * the last two. */
static int64_t swapped_dim(int64_t d, int r)
{
    return d == r - 1 ? r - 2 : d == r - 2 ? r - 1 : d;
}

/* The op that moves transpose(v)'s elements into vt, reading it alone:
 * an all_gather or a slice on one dim, or an all_to_all; else NULL. The
 * partitioner makes v's transpose so where v is split and gp needs it
 * whole (queries split along the sequence, keys and values gathered: the
 * transpose of v's shard, then gathered), or whole and gp needs a slice
 * (v's heads sliced as the queries' are split), or split another way (v
 * split along the sequence, the heads split for attention: Ulysses'
 * sequence parallelism). */
static ir_op *layout_of(const ir_value *vt)
{
    ir_op *d = vt->def;
    if (!d || d->nin != 1 || d->nres != 1 || vt->sh.partial ||
        (d->code != IR_ALL_GATHER && d->code != IR_SLICE && d->code != IR_ALL_TO_ALL))
        return NULL;
    return d;
}

/* The sum over ranks that op mk's partial result goes through before
 * its scale: an all_reduce (a sum) or a reduce_scatter of it alone, read
 * once, by an op whose result is of its type and sharding; else NULL. dk
 * is partial where the queries are split along the sequence (the sum
 * over them), and the partitioner sums it before autodiff's scale. */
static ir_op *sum_of(const ag *G, const ir_op *mk)
{
    const ir_value *x = mk->res[0];
    ir_op *c = G->uses[x->id] == 1 ? G->reader[x->id] : NULL;
    if (!x->sh.partial || !c || c->nin != 1 || c->nres != 1 ||
        !(c->code == IR_REDUCE_SCATTER || (c->code == IR_ALL_REDUCE && c->a->reduce == IR_RED_SUM)))
        return NULL;
    const ir_value *y = c->res[0];
    const ir_op *s = G->uses[y->id] == 1 ? G->reader[y->id] : NULL;
    if (!s || s->nres != 1 || !ir_type_eq(&s->res[0]->type, &y->type) ||
        !ir_sharding_eq(&s->res[0]->sh, &y->sh, y->type.rank))
        return NULL;
    return c;
}

/* One match: autodiff's ops around attn_probs p. lay: the layout op
 * between v's transpose and gp's matmul (layout_of), or NULL; where there
 * is one, v is made when the form is rewritten (relayout), and lay_kept
 * says another op reads lay's result (so lay and the transpose stay).
 * ck: the sum over ranks between dk's matmul and its scale (sum_of), or
 * NULL. */
typedef struct form {
    ir_op *p, *t1, *mv, *tv, *lay, *mg, *m1, *sum, *sub, *gs, *mq, *sq, *tg, *mk, *ck, *sk;
    ir_value *q, *k, *v, *dy, *pos;
    bool lay_kept;
} form;

/* Fills f from attn_probs op p; false when the ops around it are not
 * exactly autodiff's form. */
static bool match(const ag *G, ir_op *p, form *f)
{
    memset(f, 0, sizeof *f);
    f->p = p;
    const ir_value *pr = p->res[0];
    int r = pr->type.rank;
    ir_value *q = p->in[0], *k = p->in[1];
    if (r < 2 || pr->sh.partial || q->type.dim[r - 1] > AT_MAX_WIDTH)
        return false;
    f->q = q, f->k = k, f->pos = p->nin == 3 ? p->in[2] : NULL;
    int np = 0; /* p's reads the form accounts for */
    ir_op *rd[3] = {0};
    int nrd = 0;
    /* p's readers: transpose (dv), mul (gp * p) and mul (p * (..)) */
    for (int i = 0; i < G->m->ops.n; i++) {
        ir_op *o = IR_OP(G->m, i);
        for (int j = 0; j < o->nin; j++)
            if (o->in[j] == pr) {
                if (nrd == 3)
                    return false;
                rd[nrd++] = o;
                break;
            }
    }
    for (int i = 0; i < nrd; i++) {
        ir_op *o = rd[i];
        if (o->code == IR_TRANSPOSE && swaps_last(o, r) && !f->t1) {
            f->t1 = o;
            np++;
        } else if (o->code == IR_MUL && o->in[0] != o->in[1]) {
            const ir_value *x = other(o, pr);
            if (x && x->def && x->def->code == IR_MATMUL && !f->m1)
                f->m1 = o;
            else if (x && x->def && x->def->code == IR_SUB && !f->gs)
                f->gs = o;
            else
                return false;
            np++;
        } else
            return false;
    }
    if (np != G->uses[pr->id] || !f->m1 || !f->gs)
        return false;
    /* gp = dy @ transpose(v), read by the mul and the sub */
    f->mg = def_of(G, other(f->m1, pr), IR_MATMUL, 2);
    if (!f->mg)
        return false;
    ir_value *gp = f->mg->res[0], *vt = f->mg->in[1];
    f->tv = def_of(G, vt, IR_TRANSPOSE, 1);
    if (!f->tv && (f->lay = layout_of(vt))) {
        f->tv = def_of(G, f->lay->in[0], IR_TRANSPOSE, 1);
        f->lay_kept = G->uses[vt->id] > 1;
    }
    if (!f->tv || !swaps_last(f->tv, r))
        return false;
    f->dy = f->mg->in[0], f->v = f->lay ? NULL : f->tv->in[0];
    /* gs = p * (gp - sum(gp * p, last, keepdims)) */
    f->sum = only_reader(G, f->m1->res[0], IR_SUM);
    if (!f->sum || !f->sum->a->keepdims || (f->sum->a->axis != r - 1 && f->sum->a->axis != -1))
        return false;
    f->sub = only_reader(G, f->sum->res[0], IR_SUB);
    if (!f->sub || f->sub->in[0] != gp || f->sub->in[1] != f->sum->res[0] ||
        other(f->gs, pr) != f->sub->res[0] || G->uses[f->sub->res[0]->id] != 1)
        return false;
    /* dq = (gs @ k) * c; dk = (transpose(gs) @ q) * c */
    ir_value *gs = f->gs->res[0];
    int64_t d = q->type.dim[r - 1];
    int ngs = 0;
    for (int i = 0; i < G->m->ops.n; i++) {
        ir_op *o = IR_OP(G->m, i);
        if (o->nin < 1 || o->in[0] != gs)
            continue;
        if (o->code == IR_MATMUL && o->in[1] == k && !f->mq && G->uses[o->res[0]->id] == 1 &&
            scales(G, G->reader[o->res[0]->id], o->res[0], d)) {
            f->mq = o, f->sq = G->reader[o->res[0]->id];
            ngs++;
        } else if (swaps_last(o, r) && !f->tg && G->uses[o->res[0]->id] == 1) {
            ir_op *mk = only_reader(G, o->res[0], IR_MATMUL);
            if (!mk || mk->in[0] != o->res[0] || mk->in[1] != q ||
                G->uses[mk->res[0]->id] != 1)
                return false;
            ir_op *ck = sum_of(G, mk);
            const ir_value *un = ck ? ck->res[0] : mk->res[0]; /* what the scale reads */
            if (!scales(G, G->reader[un->id], un, d))
                return false;
            f->tg = o, f->mk = mk, f->ck = ck, f->sk = G->reader[un->id];
            ngs++;
        } else
            return false;
    }
    if (ngs == 0 || ngs != G->uses[gs->id])
        return false;
    /* dv = transpose(p) @ dy, with the same dy */
    if (f->t1) {
        f->mv = only_reader(G, f->t1->res[0], IR_MATMUL);
        if (!f->mv || f->mv->in[0] != f->t1->res[0] || f->mv->in[1] != f->dy)
            return false;
    }
    /* the operands' dtypes: one float dtype (the shape rule checks the
     * rest); v's width, vt's rows */
    ir_dtype dt = q->type.dtype;
    return k->type.dtype == dt && vt->type.dtype == dt && f->dy->type.dtype == dt &&
           vt->type.dim[r - 2] <= AT_MAX_WIDTH;
}

/* Form f's v where v^T is a layout op of v's transpose (f->lay): a new
 * op of the layout op's kind and axes, reading the transpose's operand,
 * on the dim it moved there (the last two swapped), its result v of
 * vt's type and sharding with the last two dims swapped (appended: the
 * caller places it). */
static ir_op *relayout(ir_module *m, form *f)
{
    const ir_op *g = f->lay;
    const ir_value *vt = g->res[0];
    int r = vt->type.rank;
    ir_attrs a = *g->a;
    a.dim = swapped_dim(a.dim, r);
    if (g->code == IR_ALL_TO_ALL)
        a.dim2 = swapped_dim(a.dim2, r);
    ir_type t = vt->type;
    t.dim[r - 1] = vt->type.dim[r - 2];
    t.dim[r - 2] = vt->type.dim[r - 1];
    ir_value *in = f->tv->in[0];
    ir_op *o = ir_append(m, g->code, &in, 1, &a, &t);
    o->loc = g->loc, o->rep = g->rep, o->phase = g->phase;
    ir_sharding sh = vt->sh;
    sh.naxes[r - 1] = vt->sh.naxes[r - 2];
    sh.naxes[r - 2] = vt->sh.naxes[r - 1];
    memcpy(sh.axes[r - 1], vt->sh.axes[r - 2], sizeof sh.axes[r - 1]);
    memcpy(sh.axes[r - 2], vt->sh.axes[r - 1], sizeof sh.axes[r - 2]);
    o->res[0]->sh = sh;
    f->v = o->res[0];
    return o;
}

/* Whether values a and b are the same: one value, or made alike (the
 * same op, attributes, type and sharding, of operands alike) by ops that
 * compute the same elements wherever they run: the partitioner makes a
 * split query's positions once for the forward and again for autodiff's
 * backward (iota, this rank's slice, plus its offset), and gathers split
 * keys and values again for the backward rather than keep the forward's.
 * depth bounds the chain. */
static bool same_made(const ir_value *a, const ir_value *b, int depth)
{
    if (a == b)
        return true;
    if (!a || !b || !a->def || !b->def || depth == 0)
        return false;
    const ir_op *x = a->def, *y = b->def;
    switch (x->code) {
    case IR_IOTA: case IR_CONST: case IR_SLICE: case IR_CONSTRAIN: case IR_RESHAPE:
    case IR_CAST: case IR_ADD: case IR_SUB: case IR_MUL: case IR_TRANSPOSE: case IR_ALL_GATHER:
    case IR_ALL_TO_ALL:
        break;
    default:
        return false;
    }
    ir_sharding bs = b->sh; /* the layout: whether the user gave it is no matter */
    bs.kind = a->sh.kind;
    if (x->code != y->code || x->a != y->a || x->nin != y->nin || x->nres != 1 || y->nres != 1 ||
        a->res != b->res || !ir_type_eq(&a->type, &b->type) ||
        !ir_sharding_eq(&a->sh, &bs, a->type.rank))
        return false;
    for (int i = 0; i < x->nin; i++)
        if (!same_made(x->in[i], y->in[i], depth - 1))
            return false;
    return true;
}

/* The forward of form f: an attention of the form's q, k, v and
 * positions (or made alike: same_made) and mask, before op `first`, not
 * taken by another form (used, by op index), whose result is of dy's type
 * and not partial; else NULL. */
static ir_op *forward_of(const ag *G, const form *f, bool causal, const ir_op *first,
                         const bool *used)
{
    int end = at_of(G, first);
    for (int i = 0; i < end; i++) {
        ir_op *o = IR_OP(G->m, i);
        if (o->code != IR_ATTENTION || o->nres != 1 || used[i] || o->a->causal != causal ||
            o->a->heads_inner || !same_made(o->in[0], f->q, 4) || !same_made(o->in[1], f->k, 4) ||
            !same_made(o->in[2], f->v, 4) ||
            (o->nin == 4 ? !same_made(o->in[3], f->pos, 4) : f->pos != NULL))
            continue;
        const ir_value *y = o->res[0];
        if (!y->sh.partial && ir_type_eq(&y->type, &f->dy->type))
            return o;
    }
    return NULL;
}

/* attn_delta's y and dy for forward result y and gradient dy: the
 * transpose of y's one reader and dy's operand, with the heads inner,
 * where y's one reader and dy's maker swap the heads (made before op
 * `first`); else y and dy themselves. */
static bool heads_pair(const ag *G, ir_value *y, ir_value *dy, const ir_op *first,
                       ir_value **ty, ir_value **tdy)
{
    ir_op *t = G->uses[y->id] == 1 ? G->reader[y->id] : NULL;
    ir_op *d = dy->def;
    if (t && d && pass_swaps_heads(t) && pass_swaps_heads(d) && at_of(G, t) < at_of(G, first) &&
        ir_type_eq(&t->res[0]->type, &d->in[0]->type) && t->res[0]->type.dtype == y->type.dtype) {
        *ty = t->res[0];
        *tdy = d->in[0];
        return true;
    }
    *ty = y;
    *tdy = dy;
    return false;
}

/* Makes op o (whose result it keeps) the attention gradient op code. */
static void become(ir_module *m, ir_op *o, ir_opcode code, const form *f, ir_value *st,
                   bool causal)
{
    ir_value *in[6];
    int n = 0;
    in[n++] = f->q;
    in[n++] = f->k;
    if (code != IR_ATTN_DV)
        in[n++] = f->v;
    in[n++] = f->dy;
    if (st)
        in[n++] = st;
    if (f->pos)
        in[n++] = f->pos;
    o->code = code;
    o->nin = n;
    o->in = su_alloc(&m->arena, (size_t)n * sizeof *o->in);
    memcpy(o->in, in, (size_t)n * sizeof *in);
    ir_op_set_attrs(m, o, &(ir_attrs){.causal = causal});
}

int pass_attn_grad(ir_module *m)
{
    /* In the module's arena, as combine.c's tables: per value id, with
     * room for one new value per op; the new order, one new op per op. */
    int n0 = m->ops.n;
    size_t nv = (size_t)m->next_id + 1 + (size_t)n0;
    ag G = {.m = m};
    G.uses = su_alloc(&m->arena, nv * sizeof *G.uses);
    G.reader = su_alloc(&m->arena, nv * sizeof *G.reader);
    G.at = su_alloc(&m->arena, nv * sizeof *G.at);
    bool *dead = su_alloc(&m->arena, nv * sizeof *dead);
    ir_op **st_of = su_alloc(&m->arena, nv * sizeof *st_of); /* by its first reader's id */
    ir_op **pre_of = su_alloc(&m->arena, nv * sizeof *pre_of); /* a new v's op, likewise */
    bool *gone_op = su_alloc(&m->arena, ((size_t)n0 + 1) * sizeof *gone_op); /* by index */
    ir_op **lse_of = su_alloc(&m->arena, nv * sizeof *lse_of); /* by its forward's result id */
    bool *used = su_alloc(&m->arena, ((size_t)n0 + 1) * sizeof *used); /* forwards taken */
    memset(G.uses, 0, nv * sizeof *G.uses);
    memset(G.reader, 0, nv * sizeof *G.reader);
    memset(dead, 0, nv * sizeof *dead);
    memset(st_of, 0, nv * sizeof *st_of);
    memset(pre_of, 0, nv * sizeof *pre_of);
    memset(gone_op, 0, ((size_t)n0 + 1) * sizeof *gone_op);
    memset(lse_of, 0, nv * sizeof *lse_of);
    memset(used, 0, ((size_t)n0 + 1) * sizeof *used);
    bool any = false;
    for (int i = 0; i < n0; i++) {
        ir_op *o = IR_OP(m, i);
        for (int k = 0; k < o->nin; k++) {
            G.uses[o->in[k]->id]++;
            G.reader[o->in[k]->id] = o;
        }
        if (o->nres)
            G.at[o->res[0]->id] = i;
        any |= o->code == IR_ATTN_PROBS;
    }
    if (!any)
        return 0;
    pass_count_kept_reads(m, G.uses);
    int done = 0;
    for (int i = 0; i < n0; i++) {
        ir_op *p = IR_OP(m, i);
        form f;
        if (p->code != IR_ATTN_PROBS || !match(&G, p, &f))
            continue;
        /* st goes before the first op that reads it, which must come
         * after every operand of st is made */
        ir_op *first = NULL;
        ir_op *readers[3] = {f.mv, f.sq, f.ck ? f.mk : f.sk}; /* attn_dk's place */
        for (int j = 0; j < 3; j++)
            if (readers[j] && (!first || at_of(&G, readers[j]) < at_of(&G, first)))
                first = readers[j];
        /* with a layout op, what the new one reads (v's operand), the
         * new one placed before `first` */
        const ir_value *ops_in[5] = {f.q, f.k, f.lay ? f.tv->in[0] : f.v, f.dy, f.pos};
        bool ready = true;
        for (int j = 0; j < 5; j++)
            ready &= !ops_in[j] || !ops_in[j]->def ||
                     at_of(&G, ops_in[j]->def) < at_of(&G, first);
        if (!ready)
            continue;
        if (f.lay)
            pre_of[first->res[0]->id] = relayout(m, &f);
        bool causal = p->a->causal;
        const ir_type *qt = &f.q->type;
        ir_type stt = *qt;
        stt.dtype = IR_F32;
        stt.dim[qt->rank - 1] = 2;
        ir_op *fw = forward_of(&G, &f, causal, first, used);
        ir_op *st;
        if (fw) {
            used[at_of(&G, fw)] = true;
            int r = qt->rank;
            ir_type lt = stt;
            lt.rank = r - 1;
            /* the forward's queries, keys and positions: the backward's
             * may be made after it */
            ir_value *lin[3] = {fw->in[0], fw->in[1], fw->nin == 4 ? fw->in[3] : NULL};
            ir_op *lse = ir_append(m, IR_ATTN_LSE, lin, f.pos ? 3 : 2,
                                   &(ir_attrs){.causal = causal}, &lt);
            lse->loc = fw->loc, lse->rep = fw->rep, lse->phase = fw->phase;
            lse->res[0]->sh = p->res[0]->sh; /* [.., S, T] with T whole: [.., S] */
            lse->res[0]->sh.naxes[r - 1] = 0;
            lse_of[fw->res[0]->id] = lse;
            ir_value *din[3];
            bool heads = heads_pair(&G, fw->res[0], f.dy, first, &din[0], &din[1]);
            din[2] = lse->res[0];
            st = ir_append(m, IR_ATTN_DELTA, din, 3,
                           &(ir_attrs){.heads_inner = heads ? (uint8_t)ir_heads_all(IR_ATTN_DELTA) : 0},
                           &stt);
        } else {
            ir_value *sin[5] = {f.q, f.k, f.v, f.dy, f.pos};
            st = ir_append(m, IR_ATTN_STATS, sin, f.pos ? 5 : 4, &(ir_attrs){.causal = causal},
                           &stt);
        }
        st->loc = first->loc, st->rep = first->rep, st->phase = first->phase;
        st->res[0]->sh = p->res[0]->sh; /* [.., S, T] with T whole: [.., S, 2] */
        ir_value *s = st->res[0];
        st_of[first->res[0]->id] = st;
        if (f.sq) /* the scales' constants, before their muls change */
            dead[other(f.sq, f.mq->res[0])->id] = true;
        if (f.sk)
            dead[other(f.sk, (f.ck ? f.ck : f.mk)->res[0])->id] = true;
        if (f.sq)
            become(m, f.sq, IR_ATTN_DQ, &f, s, causal);
        if (f.ck) {
            /* attn_dk (scaled) where the matmul was, partial, summed by
             * the collective, which then makes the scale's result */
            int at_c = at_of(&G, f.ck), at_sk = at_of(&G, f.sk);
            become(m, f.mk, IR_ATTN_DK, &f, s, causal);
            ir_value *y = f.sk->res[0];
            f.ck->res[0] = y;
            y->def = f.ck;
            G.at[y->id] = at_c;
            gone_op[at_sk] = true;
        } else if (f.sk) {
            become(m, f.sk, IR_ATTN_DK, &f, s, causal);
        }
        if (f.mv)
            become(m, f.mv, IR_ATTN_DV, &f, s, causal);
        const ir_op *gone[] = {f.p, f.t1, f.lay_kept ? NULL : f.tv, f.lay_kept ? NULL : f.lay,
                               f.mg, f.m1, f.sum, f.sub, f.gs, f.mq, f.tg, f.ck ? NULL : f.mk};
        for (size_t j = 0; j < sizeof gone / sizeof *gone; j++)
            if (gone[j])
                dead[gone[j]->res[0]->id] = true;
        done++;
    }
    if (!done)
        return 0;
    /* The new order: each st before its first reader (after a new v's
     * op), each lse right after its forward; m->ops has room for n0 ops
     * and those appended, at least as many as placed. */
    ir_op **out = su_alloc(&m->arena, ((size_t)n0 + 3 * (size_t)done) * sizeof *out);
    int nout = 0;
    for (int i = 0; i < n0; i++) {
        ir_op *o = IR_OP(m, i);
        if (o->nres && pre_of[o->res[0]->id])
            out[nout++] = pre_of[o->res[0]->id];
        if (o->nres && st_of[o->res[0]->id])
            out[nout++] = st_of[o->res[0]->id];
        if (!gone_op[i] && (!o->nres || !dead[o->res[0]->id]))
            out[nout++] = o;
        if (o->nres && lse_of[o->res[0]->id])
            out[nout++] = lse_of[o->res[0]->id];
    }
    m->ops.n = 0;
    for (int i = 0; i < nout; i++)
        m->ops.v[m->ops.n++] = out[i];
    return done;
}
