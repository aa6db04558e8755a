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
 * each intermediate read by nothing else (or through constrains that only
 * rename it, each read once: after partitioning, a constrain of the same
 * local type holds the same bytes, as where the sharding gave gx and x
 * layouts that differ on axes of size 1; those go with the ops they fed;
 * gx may also be a constrain of the same bytes that the means' ops read,
 * dy * g read only by it: find_gx), the means over the last dim
 * with the dim kept, no value partial, one float dtype, dy and x of dx's
 * type, the statistics [..., 1] and g [n]. One more form: dy split by
 * rows where the forward normalised x whole (sequence parallelism's first
 * norm, over the embeddings), whose xh (read by dx's ops and the gain's
 * gradient) and rstd reach the backward as the same slice of their rows,
 * not along the last dim (or as constrains of the same bytes, on axes of
 * size 1): the op then reads that slice of x and of the mean, made just
 * before it and before rstd's slice, and rstd's slice. Where the
 * normalised dim is split, the means are partial sums and collectives,
 * not this form, and autodiff's ops stay; so they do on any form that
 * differs. The statistics
 * are whatever the program computed them as: the new op computes what
 * the ops it replaces did from them.
 *
 * Then the statistics come from the forward (stats_from_forward). Autodiff
 * computes them again in the backward from the x the forward normalised:
 *   layernorm: mean = mean(x), rstd = rsqrt(mean((x - mean)^2) + eps)
 *   rmsnorm:   r = rsqrt(mean(x^2) + eps)
 * two row kernels a layernorm (one an rmsnorm) reading x again. Where the
 * program has that layernorm (rmsnorm) of the same x before them, with
 * eps the constant added, the mean moves to just after it and the rstd
 * becomes layernorm_rstd(x) {eps} (rmsnorm_rstd) there too, both in the
 * forward's phase and repetition; the normalisation's kernel stores them
 * from its own sums (passes/fuse.c), so the backward reads [..., 1] values
 * kept from the forward, as PyTorch keeps its mean and rstd. The rstd is
 * then computed in f32 and rounded once, where autodiff's form rounded
 * x - mean, its square, their mean and the sum with eps each to the dtype
 * (the same values in f32). The ops between are dropped when nothing else
 * reads them. */
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

/* v through the constrains that rename it (ir_renamed_from), each read
 * once: by the op before it on the way, or by the op reading v. */
static const ir_value *thru(const ng *G, const ir_value *v)
{
    while (v->def && v->def->code == IR_CONSTRAIN && v->def->nin == 1 && G->uses[v->id] == 1 &&
           ir_type_eq(&v->type, &v->def->in[0]->type) && !v->sh.partial &&
           !v->def->in[0]->sh.partial)
        v = v->def->in[0];
    return v;
}

/* def_of(v) through the constrains that rename v (thru). */
static ir_op *def_thru(const ng *G, const ir_value *v, ir_opcode code, int uses)
{
    return def_of(G, thru(G, v), code, uses);
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

/* One match. With a slice (sx), xh is the slice of the rows of a whole
 * xh that dy's rows are, and rstd that slice of the whole rstd (xh's):
 * same_rows' slices, or constrains that rename xh and rstd where more
 * than one op reads the renamed xh (thru takes those read once). */
typedef struct form {
    ir_op *dx, *inner, *s1, *m1, *s2, *m2, *t, *gx, *xh, *xc, *sx;
    ir_op *gxc;               /* a constrain renaming gx, which the means read */
    const ir_value *gxv;      /* gx as the ops read it: gx, or gxc's */
    ir_value *dy, *x, *mean, *rstd, *g;
} form;

/* gx as the ops read it, v (through the renames read once, thru): dy * g,
 * or a constrain of the same bytes renaming it that more than one op
 * reads (a layout on axes of size 1, as sequence parallelism's final norm
 * on a mesh of 1s before a tied head), dy * g read only there. */
static void find_gx(const ng *G, form *f, const ir_value *v)
{
    ir_op *d = v->def;
    f->gxv = v;
    f->gxc = NULL;
    if (d && d->code == IR_CONSTRAIN && d->nin == 1 && ir_type_eq(&v->type, &d->in[0]->type) &&
        !v->sh.partial && !d->in[0]->sh.partial && def_of(G, d->in[0], IR_MUL, 1)) {
        f->gxc = d;
        d = d->in[0]->def;
    }
    f->gx = d;
}

/* Whether ops a and b take the same rows of values of one shape: slices
 * of the same dim and axes, not the last dim (a row's elements stay
 * whole), or constrains that keep their operand's local type (the same
 * bytes: a slice over mesh axes of size 1). */
static bool same_rows(const ir_op *a, const ir_op *b)
{
    if (!a || !b || a->code != b->code || a->nin != 1 || b->nin != 1)
        return false;
    int r = a->in[0]->type.rank;
    if (b->in[0]->type.rank != r || r < 1)
        return false;
    if (a->code == IR_CONSTRAIN)
        return ir_type_eq(&a->res[0]->type, &a->in[0]->type) &&
               ir_type_eq(&b->res[0]->type, &b->in[0]->type) && !a->res[0]->sh.partial &&
               !b->res[0]->sh.partial;
    if (a->code != IR_SLICE ||
        (a->a != b->a && (a->a->dim != b->a->dim || a->a->naxes != b->a->naxes ||
                          memcmp(a->a->axes, b->a->axes, (size_t)a->a->naxes) != 0)))
        return false;
    int64_t d = a->a->dim < 0 ? a->a->dim + r : a->a->dim;
    return d >= 0 && d < r - 1;
}

/* v, or what v is a slice of (the slice form, match_common). */
static const ir_value *unsliced(const ir_value *v)
{
    return v->def && (v->def->code == IR_SLICE || v->def->code == IR_CONSTRAIN) ? v->def->in[0]
                                                                                 : v;
}

/* gx = dy * g, read `uses` times; xh = xc * rstd or x * rstd. */
static bool match_common(const ng *G, form *f, int gx_uses)
{
    const ir_value *dxv = f->dx->res[0];
    if (!f->gx || f->gx->code != IR_MUL || G->uses[f->gxv->id] != gx_uses)
        return false;
    f->dy = f->gx->in[0], f->g = f->gx->in[1];
    /* the means: mean(gx * xh) */
    f->t = def_thru(G, f->m2->in[0], IR_MUL, 1);
    if (!f->t || thru(G, f->t->in[0]) != f->gxv || !row_mean(f->m2))
        return false;
    const ir_value *xhv = thru(G, f->t->in[1]);
    if (xhv != thru(G, f->s2->in[0]))
        return false;
    /* the slice form: xh and rstd the same rows of whole ones (a
     * sequence-split dy of a norm whose x the forward had whole) */
    const ir_op *rs = f->rstd->def;
    if (xhv->def && (xhv->def->code == IR_SLICE || xhv->def->code == IR_CONSTRAIN)) {
        f->sx = xhv->def;
        if (!same_rows(f->sx, rs) || f->sx->in[0]->sh.partial || rs->in[0]->sh.partial)
            return false;
        xhv = f->sx->in[0];
    }
    f->xh = xhv->def;
    if (!f->xh || f->xh->code != IR_MUL ||
        ir_renamed_from(f->xh->in[1]) != ir_renamed_from(f->sx ? rs->in[0] : f->rstd))
        return false;
    const ir_type *t = &dxv->type;
    const ir_value *lx = f->sx ? f->sx->res[0] : f->x; /* x's rows dx's are */
    const ir_value *chk[] = {f->dy, lx, f->gx->res[0], f->sx ? f->sx->res[0] : f->xh->res[0]};
    for (size_t i = 0; i < sizeof chk / sizeof *chk; i++)
        if (!ir_type_eq(&chk[i]->type, t) || chk[i]->sh.partial)
            return false;
    if (f->sx && (!ir_type_eq(&f->x->type, &f->xh->res[0]->type) || f->x->sh.partial ||
                  (f->mean && !row_stat(f->mean, f->x))))
        return false;
    return t->rank >= 1 && (t->dtype == IR_F32 || t->dtype == IR_F16 || t->dtype == IR_BF16) &&
           !dxv->sh.partial && f->g->type.rank == 1 && f->g->type.dtype == t->dtype &&
           f->g->type.dim[0] == t->dim[t->rank - 1] && !f->g->sh.partial &&
           row_stat(f->rstd, lx) && (f->sx || !f->mean || row_stat(f->mean, f->x));
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
    f->s1 = def_thru(G, f->inner->in[0], IR_SUB, 1);
    f->s2 = def_thru(G, f->inner->in[1], IR_MUL, 1);
    if (!f->s1 || !f->s2)
        return false;
    f->m1 = def_thru(G, f->s1->in[1], IR_MEAN, 1);
    f->m2 = def_thru(G, f->s2->in[1], IR_MEAN, 1);
    if (!f->m1 || !f->m2 || !row_mean(f->m1) || thru(G, f->m1->in[0]) != thru(G, f->s1->in[0]))
        return false;
    find_gx(G, f, thru(G, f->s1->in[0]));
    /* xh = (x - mean) * rstd, or the slice of it (match_common) */
    const ir_value *xhv = unsliced(thru(G, f->s2->in[0]));
    f->xc = xhv->def && xhv->def->code == IR_MUL ? xhv->def->in[0]->def : NULL;
    if (!f->xc || f->xc->code != IR_SUB)
        return false;
    f->x = f->xc->in[0], f->mean = f->xc->in[1];
    return match_common(G, f, 3) && ir_type_eq(&f->xc->res[0]->type, &f->x->type);
}

/* rmsnorm: dx = r * (gx - xh * mean(gx * xh)), xh = x * r. */
static bool match_rmsnorm(const ng *G, ir_op *dx, form *f)
{
    if (!begin(G, dx, f))
        return false;
    find_gx(G, f, thru(G, f->inner->in[0]));
    f->s2 = def_thru(G, f->inner->in[1], IR_MUL, 1);
    if (!f->s2)
        return false;
    f->m2 = def_thru(G, f->s2->in[1], IR_MEAN, 1);
    if (!f->m2)
        return false;
    const ir_value *xhv = unsliced(thru(G, f->s2->in[0]));
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

/* A new op code(in[0 .. nin)) {a} of type t and sharding sh, of like's
 * place (line, repetition, phase), to stand just before the op making
 * value at (one such op a value: the matches check the slots they take);
 * its result. */
static ir_value *add_before(ir_module *m, edits *e, const ir_value *at, ir_opcode code,
                            ir_value **in, int nin, const ir_attrs *a, const ir_type *t,
                            const ir_sharding *sh, const ir_op *like)
{
    ir_op *o = ir_append(m, code, in, nin, a, t);
    o->loc = like->loc, o->rep = like->rep, o->phase = like->phase;
    o->res[0]->sh = *sh;
    e->before[at->id] = o;
    e->added++;
    return o->res[0];
}

/* dx becomes layernorm_dx (ln) or rmsnorm_dx, reading f's operands; the
 * ops between are dropped. */
static void rewrite(ir_module *m, const ng *G, form *f, bool ln, edits *e)
{
    const ir_op *gone[] = {f->inner, f->s1, f->m1, f->s2, f->m2, f->t, f->gx, f->gxc};
    for (size_t j = 0; j < sizeof gone / sizeof *gone; j++)
        if (gone[j])
            e->dead[gone[j]->res[0]->id] = true;
    /* the xh the dropped ops read: its slice, in the slice form */
    const ir_value *xr = f->sx ? f->sx->res[0] : f->xh->res[0];
    if (G->uses[xr->id] == 2) { /* only the dropped ops read xh */
        e->dead[xr->id] = true;
        bool whole = !f->sx || G->uses[f->xh->res[0]->id] == 1; /* xh dies too */
        if (f->sx && whole)
            e->dead[f->xh->res[0]->id] = true;
        if (whole && f->xc && G->uses[f->xc->res[0]->id] == 1)
            e->dead[f->xc->res[0]->id] = true;
    } else if (f->xc && G->uses[f->xc->res[0]->id] > 1 && f->xh->in[0] == f->xc->res[0]) {
        /* xh for the gain's gradient from x itself: x - mean then stays in
         * the variance's kernel, not stored for xh's */
        ir_value *sin[2] = {f->x, f->mean};
        f->xh->in[0] = add_before(m, e, f->xh->res[0], IR_SUB, sin, 2, &(ir_attrs){0},
                                  &f->xc->res[0]->type, &f->xc->res[0]->sh, f->xh);
    }
    ir_value *x = f->x, *mean = f->mean;
    if (f->sx) { /* dx's rows of x and the mean: the same slice as xh's */
        x = add_before(m, e, f->dx->res[0], f->sx->code, &f->x, 1, f->sx->a,
                       &f->sx->res[0]->type, &f->sx->res[0]->sh, f->dx);
        if (ln)
            mean = add_before(m, e, f->rstd, f->sx->code, &f->mean, 1, f->sx->a, &f->rstd->type,
                              &f->rstd->sh, f->dx);
    }
    ir_value *in[5];
    int n = 0;
    in[n++] = f->dy;
    in[n++] = x;
    if (ln)
        in[n++] = mean;
    in[n++] = f->rstd;
    in[n++] = f->g;
    ir_op *dx = f->dx;
    dx->code = ln ? IR_LAYERNORM_DX : IR_RMSNORM_DX;
    dx->nin = n;
    dx->in = su_alloc(&m->arena, (size_t)n * sizeof *dx->in);
    memcpy(dx->in, in, (size_t)n * sizeof *in);
    ir_op_set_attrs(m, dx, NULL);
}

/* The constrains the matches saw through (thru) that only dropped ops
 * read: dropped too. Each was read before (G's count), none is now. */
static void drop_renames(ir_module *m, int n0, const ng *G, edits *e)
{
    size_t nv = (size_t)m->next_id + 1;
    int *live = su_alloc(&m->arena, nv * sizeof *live);
    memset(live, 0, nv * sizeof *live);
    for (int i = 0; i < m->ops.n; i++) {
        const ir_op *o = IR_OP(m, i);
        if (i < n0 && o->nres && e->dead[o->res[0]->id])
            continue;
        for (int k = 0; k < o->nin; k++)
            live[o->in[k]->id]++;
    }
    pass_count_kept_reads(m, live);
    for (int i = n0 - 1; i >= 0; i--) { /* a chain of them from its end */
        const ir_op *o = IR_OP(m, i);
        if (o->code != IR_CONSTRAIN || o->nres != 1)
            continue;
        int id = o->res[0]->id;
        if (!e->dead[id] && !live[id] && G->uses[id]) {
            e->dead[id] = true;
            live[o->in[0]->id]--;
        }
    }
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

/* ---- the statistics from the forward ---- */

/* The op making v when it is code, or NULL. */
static ir_op *made_by(const ir_value *v, ir_opcode code)
{
    return v && v->def && v->def->code == code ? v->def : NULL;
}

/* Whether c is the constant eps of normalisation op l. */
static bool is_eps(const ir_value *c, const ir_op *l)
{
    const ir_op *k = made_by(c, IR_CONST);
    return k && c->type.rank == 0 && k->a->value == l->a->eps;
}

typedef struct stats {
    ir_op *mean;      /* layernorm's mean(x), moved; NULL for rmsnorm */
    ir_op *rstd;      /* the rsqrt, made the new op */
    ir_op *drop[5];   /* add, the variance's mean, the square, x - mean, eps */
    int ndrop;
} stats;

/* rsqrt(add(mean(mul(s, s)), eps)) for op rs, s x - mean(x) (layernorm) or
 * x (rmsnorm) of norm op l's x, each op between read once (x - mean twice,
 * by the square, and maybe by others: the gain's gradient's xh where x
 * needs no gradient, so that no layernorm_dx made xh anew; x - mean then
 * stays, reading the moved mean), the statistics of x's type; false
 * otherwise. */
static bool match_stats(const ng *G, ir_op *rs, const ir_op *l, stats *st)
{
    memset(st, 0, sizeof *st);
    const ir_value *x = l->in[0];
    ir_op *add = def_of(G, rs->in[0], IR_ADD, 1);
    ir_op *var = add ? def_of(G, add->in[0], IR_MEAN, 1) : NULL;
    ir_op *sq = var && row_mean(var) ? def_of(G, var->in[0], IR_MUL, 1) : NULL;
    if (!sq || sq->in[0] != sq->in[1] || !is_eps(add->in[1], l) || !row_stat(rs->res[0], x) ||
        rs->rep != l->rep)
        return false;
    st->rstd = rs;
    st->drop[st->ndrop++] = add;
    st->drop[st->ndrop++] = var;
    st->drop[st->ndrop++] = sq;
    if (G->uses[add->in[1]->id] == 1)
        st->drop[st->ndrop++] = add->in[1]->def;
    if (l->code == IR_RMSNORM)
        return sq->in[0] == x;
    ir_op *xc = made_by(sq->in[0], IR_SUB);
    ir_op *mean = xc && xc->in[0] == x ? made_by(xc->in[1], IR_MEAN) : NULL;
    if (!mean || mean->in[0] != x || !row_mean(mean) || !row_stat(mean->res[0], x) ||
        mean->rep != l->rep || G->uses[xc->res[0]->id] < 2)
        return false;
    st->mean = mean;
    if (G->uses[xc->res[0]->id] == 2) /* the square's alone */
        st->drop[st->ndrop++] = xc;
    return true;
}

static int stats_from_forward(ir_module *m)
{
    int n = m->ops.n;
    size_t nv = (size_t)m->next_id + 1;
    ng G = {.m = m};
    G.uses = su_alloc(&m->arena, nv * sizeof *G.uses);
    memset(G.uses, 0, nv * sizeof *G.uses);
    /* per value: the index of the first layernorm or rmsnorm reading it as
     * x, -1 none */
    int *norm = su_alloc(&m->arena, nv * sizeof *norm);
    int *pos = su_alloc(&m->arena, nv * sizeof *pos); /* per value id: its op's index */
    for (size_t i = 0; i < nv; i++)
        norm[i] = pos[i] = -1;
    for (int i = 0; i < n; i++) {
        const ir_op *o = IR_OP(m, i);
        for (int k = 0; k < o->nres; k++)
            pos[o->res[k]->id] = i;
        for (int k = 0; k < o->nin; k++)
            G.uses[o->in[k]->id]++;
        if ((o->code == IR_LAYERNORM || o->code == IR_RMSNORM) && norm[o->in[0]->id] < 0)
            norm[o->in[0]->id] = i;
    }
    pass_count_kept_reads(m, G.uses);
    /* per op index: the ops moved after it (a list in `after`, linked by
     * value id in `link`); per value id: dropped, moved */
    int *first = su_alloc(&m->arena, ((size_t)n + 1) * sizeof *first);
    ir_op **after = su_alloc(&m->arena, 2 * ((size_t)n + 1) * sizeof *after);
    uint8_t *gone = su_alloc(&m->arena, nv), *moved = su_alloc(&m->arena, nv);
    int nafter = 0;
    int *link = su_alloc(&m->arena, 2 * ((size_t)n + 1) * sizeof *link);
    memset(gone, 0, nv);
    memset(moved, 0, nv);
    for (int i = 0; i <= n; i++)
        first[i] = -1;
    int done = 0;
    for (int i = 0; i < n; i++) {
        ir_op *rs = IR_OP(m, i);
        if (rs->code != IR_RSQRT || gone[rs->res[0]->id])
            continue;
        /* x: the square's operand, or that of x - mean */
        const ir_op *add = made_by(rs->in[0], IR_ADD);
        const ir_op *var = add ? made_by(add->in[0], IR_MEAN) : NULL;
        const ir_op *sq = var ? made_by(var->in[0], IR_MUL) : NULL;
        if (!sq)
            continue;
        /* a layernorm's x - mean(x), or an rmsnorm's x */
        const ir_op *xc = made_by(sq->in[0], IR_SUB);
        int li = xc ? norm[xc->in[0]->id] : -1;
        if (li < 0 || IR_OP(m, li)->code != IR_LAYERNORM)
            li = norm[sq->in[0]->id];
        if (li < 0 || li > i)
            continue;
        const ir_op *l = IR_OP(m, li);
        stats st;
        if (!match_stats(&G, rs, l, &st))
            continue;
        /* the mean moves to just after the norm from a later place only, so
         * that what reads it stays after it */
        if (st.mean && (moved[st.mean->res[0]->id] || pos[st.mean->res[0]->id] < li))
            continue;
        for (int k = 0; k < st.ndrop; k++)
            gone[st.drop[k]->res[0]->id] = 1;
        ir_op *mv[2] = {st.mean, rs};
        for (int k = 0; k < 2; k++) {
            ir_op *o = mv[k];
            if (!o)
                continue;
            o->phase = l->phase, o->rep = l->rep, o->loc = l->loc;
            moved[o->res[0]->id] = 1;
            int *tail = &first[li];
            while (*tail >= 0)
                tail = &link[*tail];
            after[nafter] = o;
            link[nafter] = -1;
            *tail = nafter++;
        }
        ir_value *xin[1] = {l->in[0]};
        rs->code = l->code == IR_LAYERNORM ? IR_LAYERNORM_RSTD : IR_RMSNORM_RSTD;
        rs->nin = 1;
        rs->in = su_alloc(&m->arena, sizeof *rs->in);
        memcpy(rs->in, xin, sizeof xin);
        ir_op_set_attrs(m, rs, &(ir_attrs){.eps = l->a->eps});
        done++;
    }
    if (!done)
        return 0;
    ir_op **out = su_alloc(&m->arena, (size_t)n * sizeof *out);
    int nout = 0;
    for (int i = 0; i < n; i++) {
        ir_op *o = IR_OP(m, i);
        bool skip = o->nres && (gone[o->res[0]->id] || moved[o->res[0]->id]);
        if (!skip)
            out[nout++] = o;
        for (int k = first[i]; k >= 0; k = link[k])
            out[nout++] = after[k];
    }
    m->ops.n = 0;
    for (int i = 0; i < nout; i++)
        m->ops.v[m->ops.n++] = out[i];
    return done;
}

/* layernorm_dx and rmsnorm_dx from autodiff's form. */
static int dx_ops(ir_module *m)
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
        /* the slice form's new ops go before dx and before rstd's slice */
        if (f.sx && (!f.rstd->def || e.before[dx->res[0]->id] || e.before[f.rstd->id]))
            continue;
        rewrite(m, &G, &f, ln, &e);
        done++;
    }
    if (done) {
        drop_renames(m, n0, &G, &e);
        reorder(m, n0, &e);
    }
    return done;
}

int pass_norm_grad(ir_module *m)
{
    int n = dx_ops(m);
    return n + stats_from_forward(m);
}
