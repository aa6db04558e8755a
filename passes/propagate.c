/* propagate.c: sharding propagation (DESIGN.md §3), pass_propagate.
 *
 * Gives every value of the logical module a sharding. Annotations (FIXED)
 * are hard constraints and never change; every other value gets AUTO by
 * per-op rules swept forward (operands -> result, program order) and
 * backward (result -> operands, reverse order) until nothing changes. A
 * value is decided once, by the first rule that reaches it, which makes the
 * result deterministic and the explanation a single reason per value. What
 * no rule reaches is replicated. Rules prefer the layout that needs no
 * communication; where they cannot keep a split (a reshape that scatters
 * it, an axis used twice, a size it does not divide) they drop it and the
 * reason says so, so --explain-sharding can answer "why is this gathered?".
 * A normalisation over a split dim keeps it split where the partitioner's
 * all-reduced statistics move fewer bytes than gathering the dim, and the
 * reason gives both counts.
 */
#include "passes.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

#define WHY_LEN 512  /* one reason; longer ones are cut, never overrun */
#define NAME_LEN 64  /* "%name" in a reason */

typedef struct prop {
    ir_module *m;
    pass_explain *ex;   /* may be NULL: no reasons kept */
    const char **names; /* per value id: its name in the printed IR */
    bool changed;       /* some value was decided in this sweep */
    int only;           /* which ops the sweeps visit: ONLY_* */
    ir_sharding *pin;   /* per value id: a layout kept across reruns (kind
                         * NONE: none), see scatter_partials */
    const char **pin_why;
} prop;

/* A training step is propagated in three rounds: the forward ops alone, so
 * activations and params settle as in inference; then the optimizer
 * updates alone (with the casts of master weights), so each gradient and
 * optimizer state takes its param's sharding (the layout the update needs)
 * before the backward ops' own rules reach it; then everything. */
enum { ONLY_ALL, ONLY_FORWARD, ONLY_OPTIM };

/* A rule's proposal for one value: the sharding and why. */
typedef struct cand {
    ir_sharding sh;
    char pre[WHY_LEN];  /* "forward from %x through gelu" */
    char why[WHY_LEN];  /* what the rule adds: ties, dropped axes */
    bool tie;
    bool quiet;         /* no reasons kept (prop.ex NULL): pre and why stay empty */
} cand;

/* ---- small helpers ---- */

/* An empty proposal, quiet where no reasons are kept. */
static void cand_init(const prop *p, cand *c)
{
    memset(c, 0, sizeof *c);
    c->quiet = !p->ex;
}

static void note(cand *c, const char *fmt, ...) SU_PRINTF(2, 3);

/* Appends to the reason (silently cut at WHY_LEN). */
static void note(cand *c, const char *fmt, ...)
{
    if (c->quiet)
        return;
    size_t k = strlen(c->why);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->why + k, sizeof c->why - k, fmt, ap);
    va_end(ap);
}

/* The value's name as the printed IR shows it: "%x", "%x.1", "%4". */
static const char *vname_in(const char **names, const ir_value *v, char buf[NAME_LEN])
{
    snprintf(buf, NAME_LEN, "%s", v->id >= 0 && names[v->id] ? names[v->id] : "%?");
    return buf;
}
#define vname(v, buf) vname_in(p->names, v, buf)

static bool has_sh(const ir_value *v) { return v->sh.kind != IR_SH_NONE; }

/* A value without a sharding reads as replicated: it contributes no axes. */
static const ir_sharding *sh_of(const ir_value *v)
{
    static const ir_sharding none; /* read-only */
    return has_sh(v) ? &v->sh : &none;
}

static void copy_dim(ir_sharding *dst, int dd, const ir_sharding *src, int sd)
{
    dst->naxes[dd] = src->naxes[sd];
    memcpy(dst->axes[dd], src->axes[sd], src->naxes[sd]);
}

static bool dim_eq(const ir_sharding *a, int da, const ir_sharding *b, int db)
{
    return a->naxes[da] == b->naxes[db] && !memcmp(a->axes[da], b->axes[db], a->naxes[da]);
}

/* "(dp, _)" or "((dp, tp), _)": the dims of s as ir_sharding_print writes
 * them, without the shard/auto keyword. Cut at 128 bytes. */
static const char *dims_text(const ir_sharding *s, int rank, const ir_mesh *mesh, char buf[128])
{
    size_t k = 0; /* snprintf's count may pass the end: k is only used below 128 */
#define PUT(...) (k < 128 ? k += (size_t)snprintf(buf + k, 128 - k, __VA_ARGS__) : k)
    PUT("(");
    for (int d = 0; d < rank; d++) {
        int n = s->naxes[d];
        PUT("%s%s", d ? ", " : "", n == 0 ? "_" : n > 1 ? "(" : "");
        for (int i = 0; i < n; i++)
            PUT("%s%s", i ? ", " : "", mesh->name[s->axes[d][i]]);
        if (n > 1)
            PUT(")");
    }
    PUT(")");
#undef PUT
    return buf;
}

/* How the reason names operand i of op: the language's argument names. */
static const char *operand_name(ir_opcode code, int i)
{
    static const char *const ab[] = {"a", "b"}, *const cab[] = {"cond", "a", "b"},
                             *const norm[] = {"x", "g", "b"},
                             *const emb[] = {"table", "ids"}, *const att[] = {"q", "k", "v"},
                             *const mse[] = {"pred", "target"}, *const xent[] = {"logits", "labels"};
    switch (ir_ops[code].cls) {
    case IR_C_BINARY: return code == IR_WHERE ? cab[i] : ab[i];
    case IR_C_NORM: return code == IR_SOFTMAX ? "x" : norm[i];
    case IR_C_LOSS: return code == IR_MSE ? mse[i] : xent[i];
    default: break;
    }
    switch (code) {
    case IR_MATMUL: return ab[i];
    case IR_EMBEDDING: return emb[i];
    case IR_ATTENTION:
    case IR_ATTN_PROBS: return att[i];
    case IR_EMBEDDING_GRAD: return i ? "dy" : "ids";
    case IR_XENT_GRAD: return xent[i];
    default: return "x";
    }
}

/* ---- deciding a value ---- */

/* Makes a rule's proposal legal for v: a mesh axis may split only one dim
 * once, and each dim's size must be a multiple of its axes' product. An
 * offending axis is dropped (earlier dims and major axes win) and the reason
 * says so, because a dropped split is where communication will appear. */
static void legalize(cand *c, const ir_value *v, const ir_mesh *mesh)
{
    unsigned used = 0;
    for (int d = 0; d < IR_MAX_RANK; d++) {
        int k = 0;
        int64_t split = 1;
        for (int i = 0; d < v->type.rank && i < c->sh.naxes[d]; i++) {
            int ax = c->sh.axes[d][i];
            int64_t want = split * mesh->size[ax];
            if (used & (1u << ax))
                note(c, "; dropped %s from dim %d: already used", mesh->name[ax], d);
            else if (v->type.dim[d] % want)
                note(c, "; dropped %s from dim %d: %lld does not divide %lld", mesh->name[ax], d,
                     (long long)want, (long long)v->type.dim[d]);
            else {
                c->sh.axes[d][k++] = (uint8_t)ax;
                split = want;
                used |= 1u << ax;
            }
        }
        c->sh.naxes[d] = (uint8_t)k;
    }
}

/* Gives v the (legalized) proposal as its AUTO sharding, with the reason. */
static void commit(prop *p, ir_value *v, cand *c)
{
    legalize(c, v, &p->m->mesh);
    c->sh.kind = IR_SH_AUTO;
    c->sh.partial = 0; /* partial values exist only inside the partitioner */
    v->sh = c->sh;
    p->changed = true;
    if (p->ex && v->id >= 0 && v->id < p->ex->nvalues) {
        p->ex->why[v->id] = su_sprintf(&p->m->arena, "%s%s", c->pre, c->why);
        p->ex->tie[v->id] = c->tie;
    }
}

/* ---- rules shared by several ops ---- */

static void copy_all(cand *c, const ir_value *from)
{
    for (int d = 0; d < from->type.rank; d++)
        copy_dim(&c->sh, d, sh_of(from), d);
}

/* narrow and concat: every dim from `from` but the sliced or joined one,
 * which is whole (a split there would need the slice's owners, not a
 * rank's own block); the reason says so where `from` had it split. */
static void all_but_dim(cand *c, const ir_value *from, int dim, const char *what)
{
    copy_all(c, from);
    if (c->sh.naxes[dim])
        note(c, "; dim %d whole: it is %s", dim, what);
    c->sh.naxes[dim] = 0;
}

static const ir_value *first_with_sh(const ir_op *op)
{
    for (int i = 0; i < op->nin; i++)
        if (has_sh(op->in[i]))
            return op->in[i];
    return op->in[0];
}

/* NumPy broadcasting forward: result r's dims [0, n) aligned at their end
 * with dims [0, na) of a and [0, nb) of b. A dim of full size gives its
 * axes, a broadcast one (size 1, or missing) nothing; where both operands
 * split a dim differently a's win and the tie is recorded. */
static void bcast_fwd(prop *p, cand *c, const ir_value *a, int na, const ir_value *b, int nb,
                      const ir_value *r, int n)
{
    const ir_sharding *sa = sh_of(a), *sb = sh_of(b);
    bool tie = false;
    for (int d = 0; d < n; d++) {
        int ja = d - (n - na), jb = d - (n - nb);
        bool fa = ja >= 0 && a->type.dim[ja] == r->type.dim[d] && sa->naxes[ja];
        bool fb = jb >= 0 && b->type.dim[jb] == r->type.dim[d] && sb->naxes[jb];
        if (fa)
            copy_dim(&c->sh, d, sa, ja);
        else if (fb)
            copy_dim(&c->sh, d, sb, jb);
        tie |= fa && fb && !dim_eq(sa, ja, sb, jb);
    }
    if (!tie)
        return;
    char n1[NAME_LEN], n2[NAME_LEN], t1[128], t2[128];
    c->tie = true;
    if (!c->quiet)
        note(c, "; tie: %s has %s and %s has %s; took %s", vname(a, n1),
         dims_text(sa, a->type.rank, &p->m->mesh, t1), vname(b, n2),
         dims_text(sb, b->type.rank, &p->m->mesh, t2), n1);
}

/* Broadcasting backward: dims [0, nx) of operand x from result r's dims
 * [0, n) aligned at the end; a broadcast (size-1) dim of x gets nothing. */
static void bcast_bwd(cand *c, const ir_value *x, int nx, const ir_value *r, int n)
{
    for (int j = 0; j < nx; j++) {
        int d = j + (n - nx);
        if (d >= 0 && x->type.dim[j] == r->type.dim[d])
            copy_dim(&c->sh, j, &r->sh, d);
    }
}

/* ---- matmul: [..., M, K] @ [..., K, N] -> [..., M, N], NumPy 1-D rules ---- */

typedef struct mm_dims {
    int na, nb, n;      /* batch dims of a, b and the result */
    int am, ak, bk, bn; /* dims of a and b; -1 where a 1-D operand lacks one */
    int rm, rn;         /* the result's M and N dims, or -1 */
} mm_dims;

static mm_dims mm_layout(const ir_op *op)
{
    int ra = op->in[0]->type.rank, rb = op->in[1]->type.rank, rr = op->res[0]->type.rank;
    mm_dims m;
    m.na = ra >= 2 ? ra - 2 : 0;
    m.nb = rb >= 2 ? rb - 2 : 0;
    m.n = rr - (ra >= 2) - (rb >= 2);
    m.am = ra >= 2 ? ra - 2 : -1;
    m.ak = ra - 1;
    m.bk = rb >= 2 ? rb - 2 : 0;
    m.bn = rb >= 2 ? rb - 1 : -1;
    m.rm = ra >= 2 ? m.n : -1;
    m.rn = rb >= 2 ? rr - 1 : -1;
    return m;
}

bool pass_annotated(const ir_value *v)
{
    for (int i = 0; v && i < 4; i++, v = v->def && v->def->nin ? v->def->in[0] : NULL) {
        if (v->sh.kind == IR_SH_FIXED)
            return true;
        if (!v->def || (v->def->code != IR_TRANSPOSE && v->def->code != IR_CAST))
            return false;
    }
    return false;
}

/* Keeps b's N axes and drops the clashing ones from M, gathering a, when
 * b's split is the user's annotation and a's was propagated (a weight
 * annotated shard(_, tp) under a sequence-split activation: Megatron's
 * sequence parallelism gathers the activation and keeps the weight split,
 * as annotated), or, when neither or both are annotations, when a is the
 * smaller operand and so costs less to gather. An annotated a with a
 * propagated b keeps M. */
static bool keep_n(prop *p, const ir_op *op, const mm_dims *d, cand *c)
{
    const ir_value *a = op->in[0], *b = op->in[1];
    const ir_sharding *sa = sh_of(a), *sb = sh_of(b);
    if (d->am < 0 || d->rn < 0)
        return false;
    bool fa = pass_annotated(a), fb = pass_annotated(b);
    bool by_note = fb && !fa;
    if (!by_note && (fa != fb || ir_type_numel(&a->type) >= ir_type_numel(&b->type)))
        return false;
    bool clash = false;
    char na[NAME_LEN], nb[NAME_LEN];
    for (int i = 0; i < sb->naxes[d->bn]; i++)
        clash |= memchr(sa->axes[d->am], sb->axes[d->bn][i], sa->naxes[d->am]) != NULL;
    if (!clash)
        return false;
    copy_dim(&c->sh, d->rn, sb, d->bn);
    int k = 0;
    for (int i = 0; i < sa->naxes[d->am]; i++) {
        int ax = sa->axes[d->am][i];
        if (!memchr(sb->axes[d->bn], ax, sb->naxes[d->bn]))
            c->sh.axes[d->rm][k++] = (uint8_t)ax;
        else if (by_note)
            note(c, "; dropped %s from the M dim: the N dim has it, by %s's annotation, and "
                 "%s's split was propagated", p->m->mesh.name[ax], vname(b, nb), vname(a, na));
        else
            note(c, "; dropped %s from the M dim: the N dim has it, and gathering %s costs "
                 "less than gathering %s", p->m->mesh.name[ax], vname(a, na), vname(b, nb));
    }
    c->sh.naxes[d->rm] = (uint8_t)k;
    return true;
}

/* K is contracted away (a split K makes the result partial, which is the
 * partitioner's business). An axis on both M and N stays where gathering
 * the other operand costs less (keep_n), on M when they cost the same. */
static void matmul_fwd(prop *p, const ir_op *op, cand *c)
{
    const ir_value *a = op->in[0], *b = op->in[1], *r = op->res[0];
    const ir_sharding *sa = sh_of(a), *sb = sh_of(b);
    mm_dims d = mm_layout(op);
    bcast_fwd(p, c, a, d.na, b, d.nb, r, d.n);
    if (keep_n(p, op, &d, c))
        return;
    if (d.rm >= 0)
        copy_dim(&c->sh, d.rm, sa, d.am);
    if (d.rn < 0)
        return;
    int k = 0;
    for (int i = 0; i < sb->naxes[d.bn]; i++) {
        int ax = sb->axes[d.bn][i];
        bool on_m = d.am >= 0 && memchr(sa->axes[d.am], ax, sa->naxes[d.am]);
        if (on_m)
            note(c, "; dropped %s from the N dim: the M dim has it", p->m->mesh.name[ax]);
        else
            c->sh.axes[d.rn][k++] = (uint8_t)ax;
    }
    c->sh.naxes[d.rn] = (uint8_t)k;
}

/* Operand i from the result (batch, M or N) and its K from the other
 * operand's K, so a row-split weight pulls its input's last dim along. */
static const ir_value *matmul_bwd(const prop *p, const ir_op *op, int i, cand *c)
{
    const ir_value *a = op->in[0], *b = op->in[1], *r = op->res[0];
    mm_dims d = mm_layout(op);
    const ir_value *other = i == 0 ? b : a;
    if (i == 0) {
        bcast_bwd(c, a, d.na, r, d.n);
        if (d.am >= 0)
            copy_dim(&c->sh, d.am, &r->sh, d.rm);
        copy_dim(&c->sh, d.ak, sh_of(b), d.bk);
    } else {
        bcast_bwd(c, b, d.nb, r, d.n);
        if (d.bn >= 0)
            copy_dim(&c->sh, d.bn, &r->sh, d.rn);
        copy_dim(&c->sh, d.bk, sh_of(a), d.ak);
    }
    char nb[NAME_LEN];
    if (c->sh.naxes[i == 0 ? d.ak : d.bk] && !c->quiet)
        note(c, "; K dim from %s", vname(other, nb));
    return r;
}

/* ---- reshape ---- */

/* One group of the reshape factorisation: source dims [s0, s1) and
 * destination dims starting at d0 have equal products. Only the group's
 * major source dim keeps its split, on the major destination dim, and only
 * the prefix of its axes whose product divides that dim: anything else
 * would interleave the shards, so the value must be gathered there. */
static void reshape_group(prop *p, cand *c, const ir_value *src, int s0, int s1,
                          const ir_value *dst, int d0)
{
    const ir_sharding *s = sh_of(src);
    char nb[NAME_LEN];
    int64_t split = 1;
    int k = 0;
    for (int i = 0; i < s->naxes[s0]; i++) {
        int ax = s->axes[s0][i];
        if (k == i && dst->type.dim[d0] % (split * p->m->mesh.size[ax]) == 0) {
            c->sh.axes[d0][k++] = (uint8_t)ax;
            split *= p->m->mesh.size[ax];
        } else
            note(c, "; dropped %s of %s dim %d: it does not stay major (%s must be gathered)",
                 p->m->mesh.name[ax], vname(src, nb), s0, nb);
    }
    c->sh.naxes[d0] = (uint8_t)k;
    for (int j = s0 + 1; j < s1; j++)
        for (int i = 0; i < s->naxes[j]; i++)
            note(c, "; dropped %s of %s dim %d: it does not stay major (%s must be gathered)",
                 p->m->mesh.name[s->axes[j][i]], vname(src, nb), j, nb);
}

/* Carries src's splits to dst through the reshape factorisation: groups of
 * consecutive dims with equal products. Size-1 dims join no group (they
 * cannot carry a split of any size above 1); the direction is the caller's
 * (forward: operand -> result, backward: result -> operand). */
static void reshape_map(prop *p, cand *c, const ir_value *src, const ir_value *dst)
{
    const ir_type *st = &src->type, *dt = &dst->type;
    int i = 0, j = 0;
    for (;;) {
        while (i < st->rank && st->dim[i] == 1)
            i++;
        while (j < dt->rank && dt->dim[j] == 1)
            j++;
        if (i >= st->rank || j >= dt->rank)
            return;
        int s0 = i, d0 = j;
        int64_t ps = st->dim[i++], pd = dt->dim[j++];
        while (ps != pd) { /* equal element counts: neither side runs out */
            if (ps < pd) {
                assert(i < st->rank);
                ps *= st->dim[i++];
            } else {
                assert(j < dt->rank);
                pd *= dt->dim[j++];
            }
        }
        reshape_group(p, c, src, s0, i, dst, d0);
    }
}

/* ---- the per-op rules ---- */

/* Reductions keep the other dims; the reduced dim is gone (or, with
 * keepdims, of size 1 and unsplit). Returns the result dim of input dim d,
 * or -1 for the reduced one. */
static int reduce_dim(const ir_op *op, int d)
{
    int ax = (int)op->a->axis;
    return d == ax ? -1 : d < ax || op->a->keepdims ? d : d - 1;
}

/* ---- ZeRO ---- */

/* Whether sharding s of a value of type t could take the ZeRO axis on dim
 * d: the axis is free and the dim divides by the split with it. */
static bool zero_fits(const prop *p, const ir_sharding *s, const ir_type *t, int d)
{
    int ax = p->m->train.zero_axis;
    int64_t split = p->m->mesh.size[ax];
    for (int e = 0; e < t->rank; e++)
        for (int i = 0; i < s->naxes[e]; i++) {
            if (s->axes[e][i] == ax)
                return false;
            if (e == d)
                split *= p->m->mesh.size[s->axes[e][i]];
        }
    return s->naxes[d] < IR_MAX_AXES && t->dim[d] % split == 0;
}

/* ZeRO shards what the optimizer updates over the zero axis, on the first
 * dim it divides (as the minor axis there); a value too small for it stays
 * replicated over the axis. */
static void add_zero_axis(prop *p, cand *c, const ir_value *v)
{
    int ax = p->m->train.zero_axis;
    for (int d = 0; d < v->type.rank; d++) {
        for (int i = 0; i < c->sh.naxes[d]; i++)
            if (c->sh.axes[d][i] == ax)
                return; /* already there (zero 3: the param has it) */
    }
    for (int d = 0; d < v->type.rank; d++)
        if (zero_fits(p, &c->sh, &v->type, d)) {
            c->sh.axes[d][c->sh.naxes[d]++] = (uint8_t)ax;
            note(c, "; zero %d: sharded over %s on dim %d", p->m->train.zero,
                 p->m->mesh.name[ax], d);
            return;
        }
    note(c, "; zero %d: no dim divides over %s, kept whole", p->m->train.zero,
         p->m->mesh.name[ax]);
}

/* A bf16 or f16 param's new value is its f32 master's, cast back (an op of
 * the optimizer, but not an update): it is laid out as an update of the
 * param would be, the param's sharding and the zero axis, and the master
 * and its optimizer ops take that layout from it, as an f32 param's do
 * from the param. */
static void seed_param_casts(prop *p)
{
    for (int i = 0; i < p->m->updates.n; i++) {
        const ir_update *u = IR_UPDATE(p->m, i);
        if (!u->grad || has_sh(u->v) || !has_sh(u->src) || u->v->def->code != IR_CAST)
            continue;
        cand c;
        cand_init(p, &c);
        copy_all(&c, u->src);
        if (p->m->train.zero > 0)
            add_zero_axis(p, &c, u->v);
        char nb[NAME_LEN];
        if (!c.quiet)
            snprintf(c.pre, WHY_LEN, "the new value of %s, from its master weights",
                     vname(u->src, nb));
        commit(p, u->v, &c);
    }
}

/* zero 3: once everything else is decided, every param's own layout takes
 * the zero axis too, so each rank stores a shard and gathers it where it is
 * used (the uses were decided seeing it whole). */
static void zero3_params(prop *p)
{
    for (int i = 0; i < p->m->ops.n; i++) {
        ir_op *op = IR_OP(p->m, i);
        if (op->code != IR_PARAM)
            continue;
        ir_value *v = op->res[0];
        cand c;
        cand_init(p, &c);
        c.sh = v->sh;
        add_zero_axis(p, &c, v);
        legalize(&c, v, &p->m->mesh);
        c.sh.kind = v->sh.kind;
        v->sh = c.sh;
        if (p->ex && v->id >= 0 && v->id < p->ex->nvalues)
            p->ex->why[v->id] = su_sprintf(&p->m->arena, "%s%s", p->ex->why[v->id]
                                           ? p->ex->why[v->id] : "", c.why);
    }
}

/* The mesh axes of dim d of s, "tp" or "(dp, tp)", into buf. */
static const char *dim_axes_text(const ir_sharding *s, int d, const ir_mesh *mesh, char buf[64])
{
    size_t k = 0;
#define PUT(...) (k < 64 ? k += (size_t)snprintf(buf + k, 64 - k, __VA_ARGS__) : k)
    PUT("%s", s->naxes[d] > 1 ? "(" : "");
    for (int i = 0; i < s->naxes[d]; i++)
        PUT("%s%s", i ? ", " : "", mesh->name[s->axes[d][i]]);
    PUT("%s", s->naxes[d] > 1 ? ")" : "");
#undef PUT
    return buf;
}

/* softmax, layernorm, rmsnorm and cross_entropy_grad over a dim ax that
 * their operand x has split (copied into c): computed there with partial
 * statistics, nstats all_reduces of one f32 per row (as the partitioner
 * does it), or with the dim gathered, an all_gather of x. The split stays
 * when it moves fewer bytes per rank; else, and on a tie, the dim is
 * whole, and the reason gives both counts. */
static void stats_or_gather(prop *p, const ir_value *x, int ax, int nstats, cand *c)
{
    const ir_sharding *s = sh_of(x);
    const ir_mesh *me = &p->m->mesh;
    if (!s->naxes[ax] || !c->sh.naxes[ax])
        return;
    ir_type lt = x->type;
    for (int d = 0; d < lt.rank; d++)
        lt.dim[d] /= ir_sharding_split(s, me, d);
    int64_t n = ir_sharding_split(s, me, ax);
    ir_type gt = lt, st = lt;
    gt.dim[ax] *= n;
    st.dim[ax] = 1;
    st.dtype = IR_F32;
    double gather = pass_comm_bytes(IR_ALL_GATHER, &lt, &gt, n);
    double stats = nstats * pass_comm_bytes(IR_ALL_REDUCE, &st, &st, n);
    char axes[64];
    dim_axes_text(s, ax, me, axes);
    if (stats < gather) {
        note(c, "; dim %d split over %s: partial statistics (%.0f bytes per rank) cost less "
             "than gathering it (%.0f)", ax, axes, stats, gather);
        return;
    }
    c->sh.naxes[ax] = 0;
    c->tie = stats == gather;
    note(c, "; dim %d whole: gathering it over %s (%.0f bytes per rank) costs %s partial "
         "statistics (%.0f)", ax, axes, gather, c->tie ? "the same as" : "less than", stats);
}

/* The result of the attention of attn_probs op p's q and k (and
 * positions), whose sharding is decided, or NULL: autodiff recomputes
 * the forward's probabilities for its backward, which then runs best
 * where the forward ran (queries' heads split, say, where q itself comes
 * split along the sequence: the forward's all-to-all of q and k again,
 * not the probabilities'). */
static const ir_value *forward_attention(const ir_module *m, const ir_op *p)
{
    for (int i = 0; i < m->ops.n; i++) {
        const ir_op *o = IR_OP(m, i);
        if (o->code == IR_ATTENTION && o->nres == 1 && o->in[0] == p->in[0] &&
            o->in[1] == p->in[1] && has_sh(o->res[0]) && o->a->causal == p->a->causal)
            return o->res[0];
    }
    return NULL;
}

/* Forward rule: fills c with the result's sharding from the operands (one
 * of which has a sharding). False where the op has no forward rule. */
static bool forward(prop *p, const ir_op *op, cand *c)
{
    const ir_value *x = op->in[0], *r = op->res[0];
    int rr = r->type.rank;
    switch (ir_ops[op->code].cls) {
    case IR_C_UNARY: copy_all(c, x); return true;
    case IR_C_BINARY:
        if (op->code != IR_WHERE) {
            bcast_fwd(p, c, x, x->type.rank, op->in[1], op->in[1]->type.rank, r, rr);
            return true;
        }
        /* where(cond, a, b): from a and b, then the dims they leave whole
         * from the condition */
        bcast_fwd(p, c, op->in[1], op->in[1]->type.rank, op->in[2], op->in[2]->type.rank, r, rr);
        for (int d = 0; d < rr; d++) {
            int j = d - (rr - x->type.rank);
            if (!c->sh.naxes[d] && j >= 0 && x->type.dim[j] == r->type.dim[d])
                copy_dim(&c->sh, d, sh_of(x), j);
        }
        return true;
    case IR_C_REDUCE:
        for (int d = 0; d < x->type.rank; d++)
            if (reduce_dim(op, d) >= 0)
                copy_dim(&c->sh, reduce_dim(op, d), sh_of(x), d);
        return true;
    case IR_C_NORM: /* a split normalised dim included, where that costs less */
        copy_all(c, x);
        stats_or_gather(p, x, op->code == IR_SOFTMAX ? (int)op->a->axis : rr - 1,
                        op->code == IR_RMSNORM ? 1 : 2, c);
        return true;
    case IR_C_LOSS: return true;                 /* a scalar: nothing to split */
    case IR_C_OPTIM: /* the param, or the state, it updates */
        for (int i = 0; i < op->nin; i++)
            if (has_sh(op->in[i]) && op->in[i]->type.rank == rr) {
                copy_all(c, op->in[i]);
                if (p->m->train.zero > 0)
                    add_zero_axis(p, c, r);
                return true;
            }
        return false;
    default: break;
    }
    switch (op->code) {
    case IR_MATMUL: matmul_fwd(p, op, c); return true;
    case IR_EXPAND:
        bcast_fwd(p, c, x, x->type.rank, x, 0, r, rr);
        return true;
    case IR_ATTN_PROBS: { /* [..., S, T]: leading and S from q (or k), T whole */
        const ir_value *y = forward_attention(p->m, op);
        if (y) { /* the backward's probabilities as the forward computed them */
            for (int d = 0; d + 1 < rr; d++)
                copy_dim(&c->sh, d, sh_of(y), d);
            char nb[NAME_LEN];
            note(c, "; as the forward attention %s's rows", vname(y, nb));
            return true;
        }
        const ir_value *lead = has_sh(x) ? x : op->in[1];
        for (int d = 0; d + 2 < rr; d++)
            copy_dim(&c->sh, d, sh_of(lead), d);
        copy_dim(&c->sh, rr - 2, sh_of(x), rr - 2);
        return true;
    }
    case IR_EMBEDDING_GRAD: /* [V, D]: D from dy */
        copy_dim(&c->sh, 1, sh_of(op->in[1]), op->in[1]->type.rank - 1);
        return true;
    case IR_XENT_GRAD: /* like the logits; rows from the labels while logits have none */
        if (has_sh(x)) {
            copy_all(c, x);
            stats_or_gather(p, x, rr - 1, 2, c);
        } else
            for (int d = 0; d + 1 < rr; d++)
                copy_dim(&c->sh, d, sh_of(op->in[1]), d);
        return true;
    case IR_CONSTRAIN: /* always FIXED; as identity should one arrive unset */
    case IR_ALL_REDUCE:
    case IR_BROADCAST: copy_all(c, x); return true;
    case IR_TRANSPOSE:
        for (int d = 0; d < rr; d++)
            copy_dim(&c->sh, d, sh_of(x), (int)op->a->list[d]);
        return true;
    case IR_RESHAPE: reshape_map(p, c, x, r); return true;
    case IR_NARROW: all_but_dim(c, x, (int)op->a->dim, "sliced (gathered where it was split)");
        return true;
    case IR_CONCAT:
        all_but_dim(c, first_with_sh(op), (int)op->a->dim, "joined (gathered where it was split)");
        return true;
    case IR_EMBEDDING: /* a V split of the table makes a partial, not a split */
        for (int d = 0; d + 1 < rr; d++)
            copy_dim(&c->sh, d, sh_of(op->in[1]), d);
        copy_dim(&c->sh, rr - 1, sh_of(x), 1);
        return true;
    case IR_ATTENTION: {
        const ir_value *lead = has_sh(x) ? x : has_sh(op->in[1]) ? op->in[1] : op->in[2];
        for (int d = 0; d + 2 < rr; d++)
            copy_dim(&c->sh, d, sh_of(lead), d);
        copy_dim(&c->sh, rr - 2, sh_of(x), rr - 2);
        copy_dim(&c->sh, rr - 1, sh_of(op->in[2]), rr - 1);
        return true;
    }
    default: return false; /* sources; collectives that change the layout */
    }
}

/* Losses: each operand from the other (the scalar result says nothing).
 * Returns the source, or NULL while the other operand has no sharding. */
static const ir_value *loss_bwd(const ir_op *op, int i, cand *c)
{
    const ir_value *other = op->in[1 - i];
    if (!has_sh(other))
        return NULL;
    int lead = op->in[1]->type.rank; /* xent: labels' rank = logits' leading dims */
    for (int d = 0; d < (op->code == IR_MSE ? other->type.rank : lead); d++)
        copy_dim(&c->sh, d, &other->sh, d);
    return other;
}

/* Backward rule for ops whose operands sit dim for dim under the result
 * (with a few exceptions per op). */
static const ir_value *layout_bwd(const ir_op *op, int i, cand *c)
{
    const ir_value *x = op->in[i], *r = op->res[0];
    int rr = r->type.rank;
    switch (op->code) {
    case IR_TRANSPOSE:
        for (int d = 0; d < rr; d++)
            copy_dim(&c->sh, (int)op->a->list[d], &r->sh, d);
        return r;
    case IR_EMBEDDING:
        if (i == 0)
            copy_dim(&c->sh, 1, &r->sh, rr - 1);
        for (int d = 0; i == 1 && d < x->type.rank; d++)
            copy_dim(&c->sh, d, &r->sh, d);
        return r;
    case IR_ATTENTION: /* q: leading and S; k, v: leading; v: its last too */
        for (int d = 0; d + (i == 0 ? 1 : 2) < rr; d++)
            copy_dim(&c->sh, d, &r->sh, d);
        if (i == 2)
            copy_dim(&c->sh, rr - 1, &r->sh, rr - 1);
        return r;
    case IR_ATTN_PROBS: /* q: leading and S; k: leading */
        for (int d = 0; d + (i == 0 ? 1 : 2) < rr; d++)
            copy_dim(&c->sh, d, &r->sh, d);
        return r;
    case IR_EXPAND: bcast_bwd(c, x, x->type.rank, r, rr); return r;
    case IR_NARROW: all_but_dim(c, r, (int)op->a->dim, "sliced"); return r;
    case IR_CONCAT: all_but_dim(c, r, (int)op->a->dim, "joined"); return r;
    case IR_EMBEDDING_GRAD: /* dy's D from the table's; ids say nothing */
        if (i == 0)
            return NULL;
        copy_dim(&c->sh, x->type.rank - 1, &r->sh, 1);
        return r;
    case IR_XENT_GRAD: /* logits like the result; labels its rows */
        for (int d = 0; d < x->type.rank; d++)
            copy_dim(&c->sh, d, &r->sh, d);
        return r;
    default: return NULL;
    }
}

/* Backward rule: fills c with operand i's sharding. Returns the value the
 * rule read (the result, or for losses the other operand), or NULL where
 * no rule applies. */
static const ir_value *backward(prop *p, const ir_op *op, int i, cand *c)
{
    const ir_value *x = op->in[i], *r = op->res[0];
    switch (ir_ops[op->code].cls) {
    case IR_C_UNARY: copy_all(c, r); return r;
    case IR_C_BINARY: bcast_bwd(c, x, x->type.rank, r, r->type.rank); return r;
    case IR_C_REDUCE:
        for (int d = 0; d < x->type.rank; d++)
            if (reduce_dim(op, d) >= 0)
                copy_dim(&c->sh, d, &r->sh, reduce_dim(op, d));
        return r;
    case IR_C_NORM: /* gain and bias are 1-D over the normalised last dim */
        if (i == 0)
            copy_all(c, r);
        else
            copy_dim(&c->sh, 0, &r->sh, r->type.rank - 1);
        return r;
    case IR_C_LOSS: return loss_bwd(op, i, c);
    case IR_C_OPTIM: /* every operand of the result's shape (not adamw's step) */
        if (x->type.rank != r->type.rank)
            return NULL;
        copy_all(c, r); /* zero 1 and 2 alike: a gradient as its update reads it, its
                         * shard (bucket.c keeps zero 1's unreduced gradients whole
                         * to the end of the backward) */
        return r;
    default: break;
    }
    switch (op->code) {
    case IR_MATMUL: return matmul_bwd(p, op, i, c);
    case IR_RESHAPE: reshape_map(p, c, r, x); return r;
    case IR_ALL_REDUCE:
    case IR_BROADCAST: copy_all(c, r); return r;
    default: return layout_bwd(op, i, c); /* CONSTRAIN: a resharding point, none */
    }
}

/* ---- the sweeps ---- */

static bool any_operand_sh(const ir_op *op)
{
    for (int i = 0; i < op->nin; i++)
        if (has_sh(op->in[i]))
            return true;
    return false;
}

/* "forward from %x and %w through matmul": the operands that had a say. */
static void forward_pre(const prop *p, const ir_op *op, cand *c)
{
    if (c->quiet)
        return;
    char nb[NAME_LEN];
    size_t k = (size_t)snprintf(c->pre, WHY_LEN, "forward from");
    bool first = true;
    for (int i = 0; i < op->nin && k < WHY_LEN; i++)
        if (has_sh(op->in[i])) {
            k += (size_t)snprintf(c->pre + k, WHY_LEN - k, "%s %s", first ? "" : " and",
                                  vname(op->in[i], nb));
            first = false;
        }
    if (k < WHY_LEN)
        snprintf(c->pre + k, WHY_LEN - k, " through %s", ir_ops[op->code].name);
}

/* Program order: each undecided result whose operands say something. */
static bool visits(const prop *p, const ir_op *op)
{
    switch (p->only) {
    case ONLY_FORWARD: return op->phase == IR_PH_FORWARD;
    case ONLY_OPTIM: /* with the casts of master weights and their gradients; not
                      * clip's sums of squares, which would take the replicated
                      * norm's layout back into the squared gradients */
        return ir_ops[op->code].cls == IR_C_OPTIM ||
               (op->phase == IR_PH_OPTIMIZER && ir_ops[op->code].cls != IR_C_REDUCE);
    default: return true;
    }
}

static void sweep_forward(prop *p)
{
    for (int i = 0; i < p->m->ops.n; i++) {
        ir_op *op = IR_OP(p->m, i);
        if (!visits(p, op) || op->nres != 1 || has_sh(op->res[0]) || !any_operand_sh(op))
            continue;
        cand c;
        cand_init(p, &c);
        if (!forward(p, op, &c))
            continue;
        forward_pre(p, op, &c);
        commit(p, op->res[0], &c);
    }
}

/* Reverse program order: each undecided operand of a decided result, so a
 * value used by several ops takes its last user's layout first. Never
 * through a constrain: the user asked for a resharding there. */
static void sweep_backward(prop *p)
{
    for (int i = p->m->ops.n - 1; i >= 0; i--) {
        ir_op *op = IR_OP(p->m, i);
        if (!visits(p, op) || op->nres != 1 || !has_sh(op->res[0]) || op->code == IR_CONSTRAIN)
            continue;
        for (int j = 0; j < op->nin; j++) {
            cand c;
            cand_init(p, &c);
            const ir_value *from = has_sh(op->in[j]) ? NULL : backward(p, op, j, &c);
            if (!from)
                continue;
            char nb[NAME_LEN];
            if (!c.quiet)
                snprintf(c.pre, WHY_LEN, "backward from %s through %s (operand %s)",
                         vname(from, nb), ir_ops[op->code].name, operand_name(op->code, j));
            commit(p, op->in[j], &c);
        }
    }
}

/* Every value of the module, in program order, to f. */
static void each_value(ir_module *m, void (*f)(prop *, ir_value *), prop *p)
{
    for (int i = 0; i < m->ops.n; i++)
        for (int r = 0; r < IR_OP(m, i)->nres; r++)
            f(p, IR_OP(m, i)->res[r]);
}

/* Before: annotations say "annotation"; an earlier run's AUTO is forgotten,
 * so the outcome depends on the annotations alone. */
static void start_value(prop *p, ir_value *v)
{
    if (v->sh.kind == IR_SH_AUTO)
        memset(&v->sh, 0, sizeof v->sh);
    if (v->sh.kind == IR_SH_FIXED && p->ex && v->id >= 0 && v->id < p->ex->nvalues)
        p->ex->why[v->id] = "annotation";
    if (p->pin && v->sh.kind == IR_SH_NONE && p->pin[v->id].kind != IR_SH_NONE) {
        v->sh = p->pin[v->id];
        if (p->ex && v->id < p->ex->nvalues)
            p->ex->why[v->id] = p->pin_why[v->id];
    }
}

/* After: whatever no rule reached is replicated. */
static void finish_value(prop *p, ir_value *v)
{
    if (has_sh(v))
        return;
    cand c;
    cand_init(p, &c);
    if (!c.quiet)
        snprintf(c.pre, WHY_LEN, "replicated: no annotation or rule reaches it");
    commit(p, v, &c);
}

/* ---- partial sums scattered to where their readers split them ---- */

static unsigned used_axes(const ir_sharding *s, int rank)
{
    unsigned u = 0;
    for (int d = 0; d < rank; d++)
        for (int i = 0; i < s->naxes[d]; i++)
            u |= 1u << s->axes[d][i];
    return u;
}

/* The dim of v (an operand of reader c) that c's result splits over axis
 * ax, as c's rule asks of its operand: -1 where c's result does not split
 * ax (c does not care), -2 where c is not an op whose operand follows its
 * result dim for dim (elementwise, sum, mean, amax), or the dim is
 * broadcast. */
static int reader_dim(const ir_op *c, const ir_value *v, int ax)
{
    const ir_value *r = c->res[0];
    int cls = ir_ops[c->code].cls, rd = -1;
    for (int d = 0; d < r->type.rank && rd < 0; d++)
        if (memchr(r->sh.axes[d], ax, r->sh.naxes[d]))
            rd = d;
    if (cls == IR_C_BINARY || cls == IR_C_UNARY) {
        if (rd < 0)
            return -1;
        int vd = rd - (r->type.rank - v->type.rank);
        return vd >= 0 && v->type.dim[vd] == r->type.dim[rd] ? vd : -2;
    }
    if (c->code == IR_SUM || c->code == IR_MEAN || c->code == IR_AMAX) {
        if (rd < 0)
            return -1;
        int k = (int)(c->a->axis < 0 ? c->a->axis + v->type.rank : c->a->axis);
        return c->a->keepdims || rd < k ? rd : rd + 1;
    }
    return -2;
}

/* A matmul whose operands both split K over an axis the result does not
 * use makes a partial sum over it, which the partitioner resolves where
 * it is made: all-reduced to the result's layout. Where every reader that
 * splits that axis splits it on the same dim d (and no reader is of
 * another kind), the result splits d over it instead, so the sum is
 * reduce-scattered, half the bytes, and the readers need nothing moved:
 * Megatron's sequence parallelism, the row-parallel layer's output and the
 * column-parallel layer's input gradient scattered along the sequence. The
 * same goes for an elementwise result of such a partial value, so a bias
 * added before the residual does not keep the sum whole. Such a layout is
 * pinned and propagation rerun from the annotations, so the values that
 * follow it settle anew; returns how many were pinned. */
static int scatter_partials(prop *p)
{
    ir_module *m = p->m;
    size_t nv = (size_t)(m->next_id > 0 ? m->next_id : 1);
    int pinned = 0;
    unsigned *mask = su_alloc(&m->arena, nv * sizeof *mask);
    bool *blocked = su_alloc(&m->arena, nv * sizeof *blocked);
    int *dim = su_alloc(&m->arena, nv * sizeof *dim);
    memset(mask, 0, nv * sizeof *mask);
    memset(blocked, 0, nv * sizeof *blocked);
    for (size_t i = 0; i < nv; i++)
        dim[i] = -1;
    for (int i = 0; i < m->ops.n; i++) {
        const ir_op *op = IR_OP(m, i);
        if (op->nres != 1 || op->res[0]->sh.kind != IR_SH_AUTO)
            continue;
        const ir_value *r = op->res[0];
        unsigned mk = 0;
        if (op->code == IR_MATMUL && op->in[0]->type.rank >= 2 && op->in[1]->type.rank >= 2) {
            mm_dims d = mm_layout(op);
            const ir_sharding *sa = sh_of(op->in[0]), *sb = sh_of(op->in[1]);
            for (int j = 0; j < sa->naxes[d.ak]; j++)
                if (memchr(sb->axes[d.bk], sa->axes[d.ak][j], sb->naxes[d.bk]))
                    mk |= 1u << sa->axes[d.ak][j];
        } else if (ir_ops[op->code].cls == IR_C_BINARY || ir_ops[op->code].cls == IR_C_UNARY) {
            for (int j = 0; j < op->nin; j++)
                mk |= mask[op->in[j]->id];
        }
        mask[r->id] = mk & ~used_axes(&r->sh, r->type.rank);
    }
    /* every reader of a candidate, for each of its axes: one dim, or blocked */
    for (int i = 0; i < m->ops.n; i++) {
        const ir_op *c = IR_OP(m, i);
        for (int j = 0; j < c->nin; j++) {
            const ir_value *v = c->in[j];
            if (!mask[v->id] || blocked[v->id])
                continue;
            if (c->nres != 1) {
                blocked[v->id] = true;
                continue;
            }
            int ax = __builtin_ctz(mask[v->id]); /* the lowest axis only */
            int d = reader_dim(c, v, ax);
            if (d == -2 || (d >= 0 && dim[v->id] >= 0 && dim[v->id] != d))
                blocked[v->id] = true;
            else if (d >= 0)
                dim[v->id] = d;
        }
    }
    for (int i = 0; i < m->outputs.n; i++)
        blocked[IR_OUTPUT(m, i)->v->id] = true;
    for (int i = 0; i < m->updates.n; i++) {
        const ir_update *u = IR_UPDATE(m, i);
        if (u->src)
            blocked[u->src->id] = true;
        if (u->grad)
            blocked[u->grad->id] = true;
    }
    if (m->train.loss)
        blocked[m->train.loss->id] = true;
    for (int i = 0; i < m->ops.n; i++) {
        const ir_op *op = IR_OP(m, i);
        if (op->nres != 1)
            continue;
        const ir_value *v = op->res[0];
        int d = dim[v->id];
        if (!mask[v->id] || blocked[v->id] || d < 0 || v->sh.naxes[d] ||
            p->pin[v->id].kind != IR_SH_NONE)
            continue;
        int ax = __builtin_ctz(mask[v->id]);
        if (v->type.dim[d] % m->mesh.size[ax])
            continue;
        ir_sharding sh = v->sh;
        sh.axes[d][0] = (uint8_t)ax;
        sh.naxes[d] = 1;
        p->pin[v->id] = sh;
        const char *was = p->ex && v->id < p->ex->nvalues ? p->ex->why[v->id] : NULL;
        if (p->ex)
            p->pin_why[v->id] = su_sprintf(&m->arena, "%s%s%s on dim %d, as its readers split "
                                           "it: its partial sum over %s is reduce-scattered "
                                           "there, not all-reduced", was ? was : "",
                                           was ? "; " : "", m->mesh.name[ax], d,
                                           m->mesh.name[ax]);
        pinned++;
    }
    return pinned;
}

bool pass_propagate(ir_module *m, pass_explain *ex, su_buf *err)
{
    (void)err; /* no contradiction is possible: rules only fill NONE values */
    prop p = {.m = m, .ex = ex, .names = ir_value_print_names(m, &m->arena)};
    if (ex) {
        ex->names = p.names;
        ex->nvalues = m->next_id;
        size_t n = (size_t)(m->next_id > 0 ? m->next_id : 1);
        ex->why = su_alloc(&m->arena, n * sizeof *ex->why);
        ex->tie = su_alloc(&m->arena, n * sizeof *ex->tie);
    }
    size_t nv = (size_t)(m->next_id > 0 ? m->next_id : 1);
    p.pin = su_alloc(&m->arena, nv * sizeof *p.pin);
    p.pin_why = su_alloc(&m->arena, nv * sizeof *p.pin_why);
    memset(p.pin, 0, nv * sizeof *p.pin);
    /* each rerun pins at least one more value, each at most once: at most
     * a few reruns in practice (a chain of elementwise ops is one each) */
    for (int run = 0; run < 8; run++) {
        each_value(m, start_value, &p);
        static const int rounds[] = {ONLY_FORWARD, ONLY_OPTIM, ONLY_ALL};
        for (int k = m->updates.n ? 0 : 2; k < 3; k++) {
            p.only = rounds[k];
            if (p.only == ONLY_OPTIM)
                seed_param_casts(&p);
            do { /* each sweep decides values for good, so this ends */
                p.changed = false;
                sweep_forward(&p);
                sweep_backward(&p);
            } while (p.changed);
        }
        if (m->train.zero == 3) /* last: every use sees the param whole, as ZeRO-3 gathers it */
            zero3_params(&p);
        each_value(m, finish_value, &p);
        if (!scatter_partials(&p))
            break;
    }
    return true;
}

typedef struct explain_run {
    const ir_module *m;
    const pass_explain *ex;
    su_buf *out;
    su_arena scratch;       /* the values' names, when ex has none */
} explain_run;

static void explain_print(void *arg)
{
    explain_run *r = arg;
    const ir_module *m = r->m;
    const pass_explain *ex = r->ex;
    su_buf *out = r->out;
    const prop names_only = {.names = ex && ex->names ? ex->names
                                                      : ir_value_print_names(m, &r->scratch)};
    const prop *p = &names_only;
    for (int i = 0; i < m->ops.n; i++) {
        const ir_op *op = IR_OP(m, i);
        for (int k = 0; k < op->nres; k++) {
            const ir_value *v = op->res[k];
            char nb[NAME_LEN];
            su_buf_printf(out, "%s = ", vname(v, nb));
            if (has_sh(v))
                ir_sharding_print(out, &v->sh, &m->mesh, v->type.rank);
            else
                su_buf_puts(out, "none");
            bool known = ex && v->id >= 0 && v->id < ex->nvalues && ex->why[v->id];
            if (known)
                su_buf_printf(out, "  # %s%s", ex->why[v->id],
                              ex->tie[v->id] ? " (tie broken)" : "");
            su_buf_putc(out, '\n');
        }
    }
}

void pass_explain_print(const ir_module *m, const pass_explain *ex, su_buf *out)
{
    explain_run r = {.m = m, .ex = ex, .out = out};
    su_arena_init(&r.scratch, out->oom);
    bool done = su_guarded(out->oom, explain_print, &r);
    su_arena_free(&r.scratch);
    if (!done)
        su_oom(out->oom);
}
