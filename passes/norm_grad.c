/* norm_grad.c: the input gradients of layernorm and rmsnorm as one op each
 * (ops.def's layernorm_dx and rmsnorm_dx; DESIGN.md §3.4).
 *
 * Autodiff writes layernorm's input gradient from the recomputed
 * statistics (autodiff.c, grad_layernorm), per row of the last dim:
 *   xh = (x - mean) * rstd
 *   gx = dy * g
 *   dx = rstd * ((gx - mean(gx)) - xh * mean(gx * xh))
 * and rmsnorm's (grad_rmsnorm) with xh = x * r and
 *   dx = r * (gx - xh * mean(gx * xh))
 * which is four kernels over the rows, with gx and xh stored between
 * them. Here, on each rank's local program after partitioning, the ops
 * from gx to dx become one, layernorm_dx(dy, x, mean, rstd, g) or
 * rmsnorm_dx(dy, x, r, g), which the CUDA backend runs as one row kernel
 * (dy's producers fused in front of it, the gradient's sum with the
 * residual's after it) and every backend computes in f32, rounding once.
 * dx keeps its value (name, sharding); gx, the means and the products
 * between are dropped, and so is xh (and x - mean) when nothing else reads
 * it. When the gain's gradient (dy * xh summed over the rows) still reads
 * xh, xh is made from x - mean computed again beside it, so that the
 * variance's kernel keeps x - mean in registers instead of storing it.
 *
 * The form is matched exactly: the ops in autodiff's order of operands,
 * each intermediate read by nothing else, the means over the last dim
 * with the dim kept, no value partial, one float dtype, dy and x of dx's
 * type, the statistics [..., 1] and g [n]. Where the normalised dim is
 * split, the means are partial sums and collectives, not this form, and
 * autodiff's ops stay; so they do on any form that differs. The statistics
 * are whatever the program computed them as: the new op computes what
 * the ops it replaces did from them. */
#include "passes.h"

#include <string.h>

typedef struct ng {
    ir_module *m;
    int *uses;  /* by value id: how many reads (and kept reads) */
} ng;

/* The op making v when it is code and v has `uses` reads, else NULL. */
static ir_op *def_of(const ng *G, const ir_value *v, ir_opcode code, int uses)
{
    ir_op *d = v ? v->def : NULL;
    return d && d->code == code && G->uses[v->id] == uses ? d : NULL;
}

/* Whether mean op o is over the last dim of its operand, the dim kept. */
static bool row_mean(const ir_op *o)
{
    int r = o->in[0]->type.rank;
    return o->a->keepdims && (o->a->axis == r - 1 || o->a->axis == -1);
}

/* Whether s is a row statistic of x: [..., 1] with x's leading dims. */
static bool row_stat(const ir_value *s, const ir_value *x)
{
    const ir_type *t = &s->type, *u = &x->type;
    if (t->dtype != u->dtype || t->rank != u->rank || t->dim[t->rank - 1] != 1 || s->sh.partial)
        return false;
    for (int d = 0; d < t->rank - 1; d++)
        if (t->dim[d] != u->dim[d])
            return false;
    return true;
}

/* One match. */
typedef struct form {
    ir_op *dx, *inner, *s1, *m1, *s2, *m2, *t, *gx, *xh, *xc;
    ir_value *dy, *x, *mean, *rstd, *g;
} form;

/* gx = dy * g, read `uses` times; xh = xc * rstd or x * rstd. */
static bool match_common(const ng *G, form *f, int gx_uses)
{
    const ir_value *dxv = f->dx->res[0];
    if (!f->gx || f->gx->code != IR_MUL || G->uses[f->gx->res[0]->id] != gx_uses)
        return false;
    f->dy = f->gx->in[0], f->g = f->gx->in[1];
    /* the means: mean(gx * xh) */
    f->t = def_of(G, f->m2->in[0], IR_MUL, 1);
    if (!f->t || f->t->in[0] != f->gx->res[0] || !row_mean(f->m2))
        return false;
    f->xh = f->t->in[1]->def;
    if (!f->xh || f->xh->code != IR_MUL || f->xh->in[1] != f->rstd || f->s2->in[0] != f->xh->res[0])
        return false;
    const ir_type *t = &dxv->type;
    const ir_value *chk[] = {f->dy, f->x, f->gx->res[0], f->xh->res[0]};
    for (size_t i = 0; i < sizeof chk / sizeof *chk; i++)
        if (!ir_type_eq(&chk[i]->type, t) || chk[i]->sh.partial)
            return false;
    return t->rank >= 1 && (t->dtype == IR_F32 || t->dtype == IR_F16 || t->dtype == IR_BF16) &&
           !dxv->sh.partial && f->g->type.rank == 1 && f->g->type.dtype == t->dtype &&
           f->g->type.dim[0] == t->dim[t->rank - 1] && !f->g->sh.partial &&
           row_stat(f->rstd, f->x) && (!f->mean || row_stat(f->mean, f->x));
}

/* Both forms: dx = rstd * inner, inner a sub read only there. */
static bool begin(const ng *G, ir_op *dx, form *f)
{
    memset(f, 0, sizeof *f);
    f->dx = dx;
    f->rstd = dx->in[0];
    f->inner = def_of(G, dx->in[1], IR_SUB, 1);
    return f->inner != NULL;
}

/* layernorm: dx = rstd * ((gx - mean(gx)) - xh * mean(gx * xh)), xh =
 * (x - mean) * rstd. */
static bool match_layernorm(const ng *G, ir_op *dx, form *f)
{
    if (!begin(G, dx, f))
        return false;
    f->s1 = def_of(G, f->inner->in[0], IR_SUB, 1);
    f->s2 = def_of(G, f->inner->in[1], IR_MUL, 1);
    if (!f->s1 || !f->s2)
        return false;
    f->m1 = def_of(G, f->s1->in[1], IR_MEAN, 1);
    f->m2 = def_of(G, f->s2->in[1], IR_MEAN, 1);
    if (!f->m1 || !f->m2 || !row_mean(f->m1) || f->m1->in[0] != f->s1->in[0])
        return false;
    f->gx = f->s1->in[0]->def;
    /* xh = (x - mean) * rstd */
    const ir_value *xhv = f->s2->in[0];
    f->xc = xhv->def && xhv->def->code == IR_MUL ? xhv->def->in[0]->def : NULL;
    if (!f->xc || f->xc->code != IR_SUB)
        return false;
    f->x = f->xc->in[0], f->mean = f->xc->in[1];
    return match_common(G, f, 3) && ir_type_eq(&f->xc->res[0]->type, &dx->res[0]->type);
}

/* rmsnorm: dx = r * (gx - xh * mean(gx * xh)), xh = x * r. */
static bool match_rmsnorm(const ng *G, ir_op *dx, form *f)
{
    if (!begin(G, dx, f))
        return false;
    f->gx = f->inner->in[0]->def;
    f->s2 = def_of(G, f->inner->in[1], IR_MUL, 1);
    if (!f->s2)
        return false;
    f->m2 = def_of(G, f->s2->in[1], IR_MEAN, 1);
    if (!f->m2)
        return false;
    const ir_value *xhv = f->s2->in[0];
    if (!xhv->def || xhv->def->code != IR_MUL)
        return false;
    f->x = xhv->def->in[0];
    return match_common(G, f, 2);
}

/* A rewrite's tables, by value id of the module before it. */
typedef struct edits {
    bool *dead;         /* the op making it is dropped */
    ir_op **before;     /* a new op to place before the op making it */
    int added;          /* new ops */
} edits;

/* dx becomes layernorm_dx (ln) or rmsnorm_dx, reading f's operands; the
 * ops between are dropped. */
static void rewrite(ir_module *m, const ng *G, form *f, bool ln, edits *e)
{
    const ir_op *gone[] = {f->inner, f->s1, f->m1, f->s2, f->m2, f->t, f->gx};
    for (size_t j = 0; j < sizeof gone / sizeof *gone; j++)
        if (gone[j])
            e->dead[gone[j]->res[0]->id] = true;
    if (G->uses[f->xh->res[0]->id] == 2) { /* only the dropped ops read xh */
        e->dead[f->xh->res[0]->id] = true;
        if (f->xc && G->uses[f->xc->res[0]->id] == 1)
            e->dead[f->xc->res[0]->id] = true;
    } else if (f->xc && G->uses[f->xc->res[0]->id] > 1 && f->xh->in[0] == f->xc->res[0]) {
        /* xh for the gain's gradient from x itself: x - mean then stays in
         * the variance's kernel, not stored for xh's */
        ir_value *sin[2] = {f->x, f->mean};
        ir_op *sub = ir_append(m, IR_SUB, sin, 2, &(ir_attrs){0}, &f->xc->res[0]->type);
        sub->loc = f->xh->loc, sub->rep = f->xh->rep, sub->phase = f->xh->phase;
        sub->res[0]->sh = f->xc->res[0]->sh;
        e->before[f->xh->res[0]->id] = sub;
        f->xh->in[0] = sub->res[0];
        e->added++;
    }
    ir_value *in[5];
    int n = 0;
    in[n++] = f->dy;
    in[n++] = f->x;
    if (ln)
        in[n++] = f->mean;
    in[n++] = f->rstd;
    in[n++] = f->g;
    ir_op *dx = f->dx;
    dx->code = ln ? IR_LAYERNORM_DX : IR_RMSNORM_DX;
    dx->nin = n;
    dx->in = su_alloc(&m->arena, (size_t)n * sizeof *dx->in);
    memcpy(dx->in, in, (size_t)n * sizeof *in);
    ir_op_set_attrs(m, dx, NULL);
}

/* The program without the dropped ops, each new op before its reader;
 * m->ops has room for the n0 ops and the new ones appended. */
static void reorder(ir_module *m, int n0, const edits *e)
{
    ir_op **out = su_alloc(&m->arena, ((size_t)n0 + (size_t)e->added) * sizeof *out);
    int nout = 0;
    for (int i = 0; i < n0; i++) {
        ir_op *o = IR_OP(m, i);
        if (o->nres && e->before[o->res[0]->id])
            out[nout++] = e->before[o->res[0]->id];
        if (!o->nres || !e->dead[o->res[0]->id])
            out[nout++] = o;
    }
    m->ops.n = 0;
    for (int i = 0; i < nout; i++)
        m->ops.v[m->ops.n++] = out[i];
}

int pass_norm_grad(ir_module *m)
{
    int n0 = m->ops.n;
    size_t nv = (size_t)m->next_id + 1;
    bool any = false;
    for (int i = 0; i < n0 && !any; i++)
        any = IR_OP(m, i)->code == IR_MEAN;
    if (!any)
        return 0;
    ng G = {.m = m};
    G.uses = su_alloc(&m->arena, nv * sizeof *G.uses);
    memset(G.uses, 0, nv * sizeof *G.uses);
    edits e = {.dead = su_alloc(&m->arena, nv * sizeof *e.dead),
               .before = su_alloc(&m->arena, nv * sizeof *e.before)};
    memset(e.dead, 0, nv * sizeof *e.dead);
    memset(e.before, 0, nv * sizeof *e.before);
    for (int i = 0; i < n0; i++) {
        const ir_op *o = IR_OP(m, i);
        for (int k = 0; k < o->nin; k++)
            G.uses[o->in[k]->id]++;
    }
    pass_count_kept_reads(m, G.uses);
    int done = 0;
    for (int i = 0; i < n0; i++) {
        ir_op *dx = IR_OP(m, i);
        if (dx->code != IR_MUL || dx->nres != 1 || e.dead[dx->res[0]->id])
            continue;
        form f;
        bool ln = match_layernorm(&G, dx, &f);
        if (!ln && !match_rmsnorm(&G, dx, &f))
            continue;
        rewrite(m, &G, &f, ln, &e);
        done++;
    }
    if (done)
        reorder(m, n0, &e);
    return done;
}
