/* narrow.c: each rank computes only the part of a value it keeps
 * (pass_narrow; DESIGN.md §3.5, after partitioning).
 *
 * The partitioner lays out each op's result as its operands give it and
 * then reshards it for its readers. Where a reader needs a value split
 * over mesh axes the op's operands did not split it over, the reshard is a
 * slice: each rank computed the whole value and keeps its part. A
 * grouped-query attention whose projections are split over more ranks
 * than it has key heads is the common case: the key and value weights'
 * gradients, x^T dk and x^T dv, are computed with every column on every
 * rank, then sliced to the rank's columns of the weight (llama.sh on 1x8:
 * eight times the work of those matmuls).
 *
 * Here, on each rank's local program, a slice of a value that nothing
 * else reads, made by an op that computes its result's elements along the
 * sliced dim independently, becomes that op of slices of its operands:
 *   - pointwise ops (ir_pointwise), broadcasting: an operand whose
 *     dim there is 1, or that lacks it, is read whole;
 *   - matmul: the sliced dim of a's rows (a sliced), of b's columns (b
 *     sliced), or a batch dim (each operand that has it sliced);
 *   - sum, mean and amax over another axis, softmax over another axis,
 *     the norms and their row statistics (layernorm, rmsnorm,
 *     layernorm_rstd, rmsnorm_rstd) along any dim but the last;
 *   - transpose (its operand's dim the permutation names);
 *   - attention and attn_probs along a leading dim (batch, heads) of q, k
 *     and v, where no operand is read in the heads-inner layout.
 * An operand slice is itself narrowed the same way where its value has
 * no other reader, and a slice the program already makes of the same
 * value, before, over the same dim and axes, is read rather than made
 * again (where it is live there anyway, or of the same phase and
 * repetition; a later slice of the program the same as it reads it too).
 * A slice of what an all_gather gathered, along the same dim over the
 * same axes, is the gather's operand, and a gather nothing reads then
 * goes (the same program on every rank drops it). A slice of an
 * all_reduce's sum, which nothing else reads, is the sum of the slice
 * where the sum is over other axes (ranks that sum together slice
 * alike), and a reduce_scatter over the sum's axes of the operand sliced
 * over the slice's axes before them where the slice's axes end with the
 * sum's (scatter_prefix): tied embeddings' gradients, sliced over tp
 * after their sum over dp, or under ZeRO over dp behind a transpose. A
 * sum narrowed as an operand of another op's narrowing is put where the
 * sum was (with its operands' slices, before it), not at that op, so
 * that it is issued as early as before; so is a forward op that the
 * backward or the optimizer slices, which stays in the forward, of its
 * phase. Slicing commutes with each of
 * these ops, so each rank computes the elements it computed before, by
 * the same arithmetic (a sum it keeps, over fewer elements); the axes
 * must be ones no operand is split or partial over (as the slice's own
 * operand is not, or the reshard would not be a slice), but for the axes
 * of a sum the reduce_scatter takes. The slice's result keeps its value:
 * its readers are unchanged. */
#include "passes.h"
#include "partition.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

typedef struct narrow {
    ir_module *m;
    int *readers;        /* [next_id]: each value's reads (ops, outputs, updates, the loss) */
    int *made;           /* [next_id]: the index in out of each value's op, -1 none */
    uint8_t *gone;       /* [next_id]: made by an op taken out */
    ir_op **reader;      /* [next_id]: an op that reads each value (the only one
                          * where readers is 1) */
    int *last;           /* [next_id]: the old index of each value's last reader
                          * (INT_MAX: read after the program) */
    int *slices;         /* [next_id]: the first of the slices of each value in out
                          * (an index into sl), -1 none */
    ir_value **subst;    /* [next_id]: a slice's value another one's stands for */
    size_t cap;          /* their room, by value id */
    struct { ir_op *op; int next; } *sl; /* the slices in out, listed by operand */
    int nsl, capsl;
    int pos;             /* the old index of the op being put */
    const ir_op *cur;    /* that op */
    su_vec out;          /* the new op list */
    int at;              /* -1: new ops go at the end of out; else before
                          * out's op at (early: a collective narrowed as an
                          * operand, or a forward op a later phase slices,
                          * and its operands' ops, where it was) */
    struct { ir_op *op; int at; } *early;
    int nearly, capearly;
    su_vec all;          /* out and early merged */
    int changed;
} narrow;

/* Room in N's arrays for a value id past next_id. */
static void room(narrow *N)
{
    size_t need = (size_t)N->m->next_id + 16;
    if (need < N->cap)
        return;
    size_t cap = 2 * need;
    int *readers = su_alloc(&N->m->arena, cap * sizeof *readers);
    int *made = su_alloc(&N->m->arena, cap * sizeof *made);
    int *last = su_alloc(&N->m->arena, cap * sizeof *last);
    uint8_t *gone = su_alloc(&N->m->arena, cap);
    ir_op **reader = su_alloc(&N->m->arena, cap * sizeof *reader);
    int *slices = su_alloc(&N->m->arena, cap * sizeof *slices);
    ir_value **subst = su_alloc(&N->m->arena, cap * sizeof *subst);
    memcpy(readers, N->readers, N->cap * sizeof *readers);
    memcpy(made, N->made, N->cap * sizeof *made);
    memset(made + N->cap, 0xff, (cap - N->cap) * sizeof *made);
    memcpy(last, N->last, N->cap * sizeof *last);
    memcpy(gone, N->gone, N->cap);
    memcpy(reader, N->reader, N->cap * sizeof *reader);
    memcpy(slices, N->slices, N->cap * sizeof *slices);
    memset(slices + N->cap, 0xff, (cap - N->cap) * sizeof *slices);
    memcpy(subst, N->subst, N->cap * sizeof *subst);
    N->slices = slices;
    N->subst = subst;
    N->readers = readers;
    N->made = made;
    N->last = last;
    N->gone = gone;
    N->reader = reader;
    N->cap = cap;
}

/* The mesh axes of a's list, as a bit set. */
static unsigned axes_mask(const ir_attrs *a)
{
    unsigned m = 0;
    for (int i = 0; i < a->naxes; i++)
        m |= 1u << a->axes[i];
    return m;
}

/* Axes v is split or partial over. */
static unsigned taken(const ir_value *v)
{
    return pass_part_used_axes(&v->sh, v->type.rank) | v->sh.partial;
}

/* The dim of operand x that dim d of op's result (rank r) comes from
 * along which slicing commutes with op, -1 where x is read whole there
 * (broadcast), -2 where the op does not commute along d. */
static int operand_dim(const ir_op *op, int k, int d, int r)
{
    const ir_value *x = op->in[k];
    int xr = x->type.rank;
    if (ir_pointwise(op->code)) {
        int dx = d - (r - xr);
        return dx < 0 || x->type.dim[dx] == 1 ? -1 : dx;
    }
    switch (op->code) {
    case IR_MATMUL: {
        if (op->a->parts || xr < 2 || r < 2)
            return -2;
        bool t = op->a->trans >> k & 1;
        if (d == r - 1) /* b's columns */
            return k == 1 ? (t ? xr - 2 : xr - 1) : -1;
        if (d == r - 2) /* a's rows */
            return k == 0 ? (t ? xr - 1 : xr - 2) : -1;
        int dx = d - (r - xr); /* a batch dim, broadcast as NumPy does */
        return dx < 0 || dx >= xr - 2 || x->type.dim[dx] == 1 ? -1 : dx;
    }
    case IR_SUM: case IR_MEAN: case IR_AMAX: {
        int ax = (int)(op->a->axis < 0 ? op->a->axis + xr : op->a->axis);
        if (op->a->keepdims)
            return d == ax ? -2 : d;
        return d < ax ? d : d + 1;
    }
    case IR_SOFTMAX:
        return d == (int)(op->a->axis < 0 ? op->a->axis + xr : op->a->axis) ? -2 : d;
    case IR_LAYERNORM_RSTD: case IR_RMSNORM_RSTD:
        return d == xr - 1 ? -2 : d;
    case IR_LAYERNORM: case IR_RMSNORM: /* x's rows; the gain and bias, [D], whole */
        return d == r - 1 ? -2 : k == 0 ? d : -1;
    case IR_TRANSPOSE:
        return (int)op->a->list[d];
    case IR_ALL_REDUCE: /* elementwise over the ranks of its axes */
        return d;
    case IR_ATTENTION: case IR_ATTN_PROBS: {
        /* a leading dim of q, k and v (k and v may hold fewer heads than
         * q, a divisor: sliced alike, each rank's query heads still read
         * their key heads); pos, the positions of a split query's rows,
         * whole. Not the rows: a causal mask is aligned to them */
        if (op->a->heads_inner || d >= r - 2)
            return -2;
        int dx = d - (r - xr);
        return dx < 0 || xr < r || x->type.dim[dx] == 1 ? -1 : dx;
    }
    default:
        return -2;
    }
}

static void take_out(narrow *N, ir_op *op);

/* An all_gather in out that nothing reads now (its slice back read its
 * operand instead) taken out: every rank of the program drops it. */
static void drop_if_dead(narrow *N, const ir_value *v)
{
    ir_op *g = v->def;
    if (g && g->code == IR_ALL_GATHER && g->nres == 1 && !N->readers[v->id] &&
        !N->gone[v->id] && N->made[v->id] >= 0 && N->out.v[N->made[v->id]] == g)
        take_out(N, g);
}

static void take_out(narrow *N, ir_op *op)
{
    N->out.v[N->made[op->res[0]->id]] = NULL;
    N->gone[op->res[0]->id] = 1;
    for (int k = 0; k < op->nin; k++) {
        N->readers[op->in[k]->id]--;
        drop_if_dead(N, op->in[k]);
    }
}

/* What a slice of x along dim d over the axes of a, with sharding sh,
 * is when x gathered them there: the gather's operand (the same bytes
 * on every rank), else NULL. */
static ir_value *gathered_from(const ir_value *x, int d, const ir_attrs *a,
                               const ir_sharding *sh, const ir_type *t)
{
    const ir_op *g = x->def;
    if (!g || g->code != IR_ALL_GATHER || g->nin != 1 || g->a->dim != d ||
        g->a->naxes != a->naxes || memcmp(g->a->axes, a->axes, (size_t)a->naxes) ||
        memcmp(&g->in[0]->sh, sh, sizeof *sh) || !ir_type_eq(&g->in[0]->type, t))
        return NULL;
    return g->in[0];
}

/* Array *v of n elements of size each, with room for one more: twice
 * *cap (at least first) in the module's arena when full (nothing to free). */
static void room_for_one(narrow *N, void **v, int n, int *cap, size_t size, int first)
{
    if (n < *cap)
        return;
    int c = *cap ? 2 * *cap : first;
    void *a = su_alloc(&N->m->arena, (size_t)c * size);
    if (n)
        memcpy(a, *v, (size_t)n * size);
    *v = a;
    *cap = c;
}

static void put(narrow *N, ir_op *op)
{
    if (N->at >= 0) { /* not in out: never narrowed again, nor read as a slice
                       * made before (made stays -1) */
        room_for_one(N, (void **)&N->early, N->nearly, &N->capearly, sizeof *N->early, 16);
        N->early[N->nearly].op = op;
        N->early[N->nearly++].at = N->at;
        return;
    }
    for (int r = 0; r < op->nres; r++)
        N->made[op->res[r]->id] = (int)N->out.n;
    su_vec_push(&N->out, N->m->oom, op);
    if (op->code != IR_SLICE || !op->nin)
        return;
    room_for_one(N, (void **)&N->sl, N->nsl, &N->capsl, sizeof *N->sl, 256);
    int x = op->in[0]->id;
    N->sl[N->nsl].op = op;
    N->sl[N->nsl].next = N->slices[x];
    N->slices[x] = N->nsl++;
}

/* A slice in out of x along dim d over a's axes with sharding sh that a
 * reader like `like`, at N->pos, may read in place of a new one: live
 * there anyway, or of the same part of the step (its phase and
 * repetition), where reading it keeps it no longer than a copy would
 * live. NULL: none. */
static ir_op *slice_in_out(const narrow *N, const ir_value *x, int d, const ir_attrs *a,
                           const ir_sharding *sh, const ir_op *like)
{
    for (int k = N->slices[x->id]; k >= 0; k = N->sl[k].next) {
        ir_op *s = N->sl[k].op;
        if (N->out.v[N->made[s->res[0]->id]] == s && (N->at < 0 || N->made[s->res[0]->id] < N->at) &&
            s->a->dim == d &&
            s->a->naxes == a->naxes && !memcmp(s->a->axes, a->axes, (size_t)a->naxes) &&
            !memcmp(&s->res[0]->sh, sh, sizeof *sh) &&
            (N->last[s->res[0]->id] >= N->pos || (s->phase == like->phase && s->rep == like->rep)))
            return s;
    }
    return NULL;
}

/* A new op like `like` (its place in the program: phase, repetition,
 * location), put at the end of out; its result's sharding sh. */
static ir_value *emit(narrow *N, const ir_op *like, ir_opcode code, ir_value **in, int nin,
                      const ir_attrs *a, const ir_type *t, const ir_sharding *sh)
{
    ir_module *m = N->m;
    room(N);
    ir_op *op = ir_append(m, code, in, nin, a, t);
    m->ops.n--; /* placed in out, not at the end of m's list */
    op->rep = like->rep;
    op->phase = like->phase;
    op->loc = like->loc;
    op->recompute = like->recompute;
    op->res[0]->sh = *sh;
    op->res[0]->name = NULL;
    for (int k = 0; k < nin; k++) {
        N->readers[in[k]->id]++;
        N->reader[in[k]->id] = op;
        if (N->last[in[k]->id] < N->pos)
            N->last[in[k]->id] = N->pos;
    }
    put(N, op);
    return op->res[0];
}

/* Where op f is an all_reduce sum over axes A whose operand is partial
 * over some of sa's axes: how many of sa's axes come before A, which sa
 * must end with (a slice over them of the sum is then a reduce_scatter
 * over A of the operand sliced over those before, the block each rank
 * keeps, as combine.c's scatter); -1 where f is not such a sum or sa does
 * not end so. */
static int scatter_prefix(const ir_op *f, const ir_attrs *sa)
{
    if (f->code != IR_ALL_REDUCE || f->nin != 1 || f->a->reduce != IR_RED_SUM ||
        !(taken(f->in[0]) & axes_mask(sa)) || sa->naxes < f->a->naxes)
        return -1;
    int pre = sa->naxes - f->a->naxes;
    if (memcmp(sa->axes + pre, f->a->axes, (size_t)f->a->naxes))
        return -1;
    ir_attrs p = {.naxes = (uint8_t)pre};
    memcpy(p.axes, sa->axes, (size_t)pre);
    return taken(f->in[0]) & axes_mask(&p) ? -1 : pre;
}

/* Whether the value y's op, whose result y alone is read (by the slice
 * being narrowed), commutes with slicing dim d over the axes of sa, and
 * each operand it slices can be sliced there (or is an all_reduce's
 * operand summed over the last of those axes: scatter_prefix). */
static bool can_narrow(const narrow *N, const ir_value *y, int d, const ir_attrs *sa, int depth)
{
    const ir_op *f = y->def;
    unsigned mask = axes_mask(sa);
    if (!f || f->nres != 1 || f->nin > 8 || depth > 64 || N->gone[y->id] || N->readers[y->id] != 1 ||
        N->made[y->id] < 0 || (taken(y) & mask))
        return false;
    if (scatter_prefix(f, sa) >= 0)
        return true;
    int r = y->type.rank, sliced = 0;
    for (int k = 0; k < f->nin; k++) {
        int dx = operand_dim(f, k, d, r);
        if (dx == -2 || (taken(f->in[k]) & mask))
            return false;
        sliced += dx >= 0;
    }
    return sliced > 0;
}

static ir_value *sliced(narrow *N, ir_value *x, int d, const ir_attrs *sa, const ir_op *like,
                        int depth);

/* y (can_narrow) made again from slices of its operands: its op taken
 * out, the new op put at the end of out; the result's type t and
 * sharding sh, those of the slice it stands for. */
static ir_value *narrowed(narrow *N, ir_value *y, int d, const ir_attrs *sa, const ir_type *t,
                          const ir_sharding *sh, int depth)
{
    ir_op *f = y->def;
    ir_value *in[8];
    /* a collective narrowed as an operand (of a slice a later op's
     * narrowing reads) stays where it was, not at that op: issued as
     * early as before; so does a forward op that the backward or the
     * optimizer slices (a layernorm's mean kept for the backward, where
     * the backward recomputes the forward whole): made in the forward, of
     * the forward's phase, as a pipeline's split takes the forward's ops */
    int at = N->at;
    if ((f->code == IR_ALL_REDUCE && depth > 0) ||
        (at < 0 && f->phase == IR_PH_FORWARD && N->cur->phase != IR_PH_FORWARD))
        N->at = N->made[y->id];
    int pre = scatter_prefix(f, sa);
    if (pre >= 0) { /* the operand's block of the sum: a reduce_scatter */
        ir_attrs pa = {.naxes = (uint8_t)pre}, ra = {.dim = d, .naxes = f->a->naxes};
        memcpy(pa.axes, sa->axes, (size_t)pre);
        memcpy(ra.axes, f->a->axes, (size_t)f->a->naxes);
        in[0] = pre ? sliced(N, f->in[0], d, &pa, f, depth + 1) : f->in[0];
        ir_value *v = emit(N, f, IR_REDUCE_SCATTER, in, 1, &ra, t, sh);
        take_out(N, f);
        N->changed++;
        N->at = at;
        return v;
    }
    /* the operands first, while f still reads them: an operand that f
     * alone reads is narrowed in turn */
    for (int k = 0; k < f->nin; k++) {
        int dx = operand_dim(f, k, d, y->type.rank);
        in[k] = dx < 0 ? f->in[k] : sliced(N, f->in[k], dx, sa, f, depth + 1);
    }
    /* the new op first: what it reads stays read when f goes */
    ir_value *v = emit(N, f, f->code, in, f->nin, f->a, t, sh);
    take_out(N, f);
    N->changed++;
    N->at = at;
    return v;
}

/* x sliced along dim d over sa's axes: x's op narrowed where it can be,
 * else a slice the program made already, else a new one. */
static ir_value *sliced(narrow *N, ir_value *x, int d, const ir_attrs *sa, const ir_op *like,
                        int depth)
{
    ir_attrs a = {.dim = d, .naxes = sa->naxes};
    memcpy(a.axes, sa->axes, sizeof a.axes);
    const ir_type *tin = &x->type;
    ir_type t;
    char err[256];
    if (!ir_infer(&N->m->mesh, IR_SLICE, &tin, 1, &a, &t, err, sizeof err))
        su_unreachable(); /* can_narrow's dims divide */
    ir_sharding sh = x->sh;
    for (int i = 0; i < sa->naxes; i++)
        sh.axes[d][sh.naxes[d]++] = sa->axes[i];
    ir_value *w = gathered_from(x, d, &a, &sh, &t);
    if (w)
        return w;
    if (can_narrow(N, x, d, sa, depth))
        return narrowed(N, x, d, sa, &t, &sh, depth);
    const ir_op *s = slice_in_out(N, x, d, &a, &sh, like);
    return s ? s->res[0] : emit(N, like, IR_SLICE, &x, 1, &a, &t, &sh);
}

/* Whether every dim of x's local type that a slice over the axes of sa
 * would divide is divisible, for y's operands down the chain: checked by
 * ir_infer as each is made; here only the first level, whose failure
 * would leave the program half changed. */
static bool divides(const narrow *N, const ir_value *y, int d, const ir_attrs *sa, int depth)
{
    const ir_op *f = y->def;
    int64_t n = pass_part_axes_size(&N->m->mesh, sa->axes, sa->naxes);
    int pre = scatter_prefix(f, sa);
    if (pre >= 0) { /* the operand sliced over the first pre axes, then scattered */
        ir_attrs pa = {.dim = d, .naxes = (uint8_t)pre};
        memcpy(pa.axes, sa->axes, (size_t)pre);
        const ir_value *x = f->in[0];
        return x->type.dim[d] % n == 0 &&
               !(pre && can_narrow(N, x, d, &pa, depth + 1) && !divides(N, x, d, &pa, depth + 1));
    }
    for (int k = 0; k < f->nin; k++) {
        int dx = operand_dim(f, k, d, y->type.rank);
        if (dx < 0)
            continue;
        const ir_value *x = f->in[k];
        if (x->type.dim[dx] % n)
            return false;
        if (can_narrow(N, x, dx, sa, depth + 1) && !divides(N, x, dx, sa, depth + 1))
            return false;
    }
    return true;
}

static void count_reads(narrow *N)
{
    ir_module *m = N->m;
    for (int i = 0; i < m->ops.n; i++) {
        ir_op *op = IR_OP(m, i);
        for (int k = 0; k < op->nin; k++) {
            N->readers[op->in[k]->id]++;
            N->reader[op->in[k]->id] = op;
            N->last[op->in[k]->id] = i;
        }
    }
    /* read after the program: never one reader alone */
    for (int i = 0; i < m->outputs.n; i++) {
        N->readers[IR_OUTPUT(m, i)->v->id] += 2;
        N->last[IR_OUTPUT(m, i)->v->id] = INT_MAX;
    }
    for (int i = 0; i < m->updates.n; i++) {
        const ir_update *u = IR_UPDATE(m, i);
        const ir_value *w[3] = {u->src, u->v, u->grad};
        for (int k = 0; k < 3; k++)
            if (w[k]) {
                N->readers[w[k]->id] += 2;
                N->last[w[k]->id] = INT_MAX;
            }
    }
    if (m->train.loss) {
        N->readers[m->train.loss->id] += 2;
        N->last[m->train.loss->id] = INT_MAX;
    }
}

/* The slice that alone reads y, where it can take y's place: y's op
 * narrowed to it (can_narrow), or NULL. */
static ir_op *narrow_slice(const narrow *N, const ir_value *y)
{
    ir_op *s = N->readers[y->id] == 1 ? N->reader[y->id] : NULL;
    if (!s || s->code != IR_SLICE || s->nres != 1 || s->in[0] != y ||
        !can_narrow(N, y, (int)s->a->dim, s->a, 0) ||
        !divides(N, y, (int)s->a->dim, s->a, 0))
        return NULL;
    return s;
}

static void work(void *arg)
{
    narrow *N = arg;
    ir_module *m = N->m;
    size_t nv = (size_t)m->next_id + 1;
    N->cap = nv + 16;
    N->readers = su_alloc(&m->arena, N->cap * sizeof *N->readers);
    N->made = su_alloc(&m->arena, N->cap * sizeof *N->made);
    N->last = su_alloc(&m->arena, N->cap * sizeof *N->last);
    N->gone = su_alloc(&m->arena, N->cap);
    N->reader = su_alloc(&m->arena, N->cap * sizeof *N->reader);
    N->slices = su_alloc(&m->arena, N->cap * sizeof *N->slices);
    N->subst = su_alloc(&m->arena, N->cap * sizeof *N->subst);
    memset(N->slices, 0xff, N->cap * sizeof *N->slices);
    memset(N->made, 0xff, N->cap * sizeof *N->made);
    memset(N->last, 0xff, N->cap * sizeof *N->last);
    count_reads(N);
    int n = m->ops.n;
    ir_op **old = su_alloc(&m->arena, ((size_t)n + 1) * sizeof *old);
    memcpy(old, m->ops.v, (size_t)n * sizeof *old);
    uint8_t *skip = su_alloc(&m->arena, (size_t)n + 1); /* slices whose op took their place */
    int *index = su_alloc(&m->arena, nv * sizeof *index); /* each op's index, by its result */
    for (int i = 0; i < n; i++)
        if (old[i]->nres)
            index[old[i]->res[0]->id] = i;
    N->out = (su_vec){0};
    for (int i = 0; i < n; i++) {
        ir_op *op = old[i];
        N->pos = i;
        N->cur = op;
        if (op->code == IR_SLICE && skip[i])
            continue;
        for (int k = 0; k < op->nin; k++)
            if (N->subst[op->in[k]->id])
                op->in[k] = N->subst[op->in[k]->id];
        /* a slice back of what an all_gather gathered, or the same as
         * a slice before (one this pass made, say): its readers read that
         * instead */
        bool sl = op->code == IR_SLICE && op->nin == 1 && op->nres == 1;
        ir_value *w = sl ? gathered_from(op->in[0], (int)op->a->dim, op->a, &op->res[0]->sh,
                                         &op->res[0]->type)
                         : NULL;
        ir_op *e = sl && !w ? slice_in_out(N, op->in[0], (int)op->a->dim, op->a,
                                           &op->res[0]->sh, op)
                            : NULL;
        if (e)
            w = e->res[0];
        if (w) {
            ir_value *r = op->res[0];
            N->subst[r->id] = w;
            N->readers[w->id] += N->readers[r->id];
            N->readers[op->in[0]->id]--;
            drop_if_dead(N, op->in[0]);
            if (N->last[w->id] < N->last[r->id])
                N->last[w->id] = N->last[r->id];
            continue;
        }
        put(N, op);
        /* a value that a slice alone reads: made narrow here, where its
         * op was, the slice's value (whose readers read it) now its
         * result; again while the new op's result has such a slice */
        ir_value *y = op->nres == 1 ? op->res[0] : NULL;
        ir_op *s;
        while (y && (s = narrow_slice(N, y)) != NULL) {
            ir_value *r = s->res[0];
            ir_value *nr = narrowed(N, y, (int)s->a->dim, s->a, &r->type, &r->sh, 0);
            ir_op *f = nr->def;
            N->readers[y->id]--; /* the slice's read, gone with it */
            skip[index[r->id]] = 1; /* s, an op of the program (r's id below nv) */
            r->def = f;
            r->res = 0;
            f->res[0] = r;
            N->made[r->id] = N->made[nr->id];
            y = r;
        }
    }
    for (int i = 0; i < m->outputs.n; i++) {
        ir_output *o = IR_OUTPUT(m, i);
        if (N->subst[o->v->id])
            o->v = N->subst[o->v->id];
    }
    for (int i = 0; i < m->updates.n; i++) {
        ir_update *u = IR_UPDATE(m, i);
        ir_value **w[3] = {&u->src, &u->v, &u->grad};
        for (int k = 0; k < 3; k++)
            if (*w[k] && N->subst[(*w[k])->id])
                *w[k] = N->subst[(*w[k])->id];
    }
    if (m->train.loss && N->subst[m->train.loss->id])
        m->train.loss = N->subst[m->train.loss->id];
    /* out's ops, each after the early ones placed before it (in the order
     * they were made: operands first) */
    su_vec *all = &N->all;
    int *first = su_alloc(&m->arena, ((size_t)N->out.n + 1) * sizeof *first);
    int *next = su_alloc(&m->arena, ((size_t)N->nearly + 1) * sizeof *next);
    for (int i = 0; i <= (int)N->out.n; i++)
        first[i] = -1;
    for (int e = N->nearly - 1; e >= 0; e--) {
        next[e] = first[N->early[e].at];
        first[N->early[e].at] = e;
    }
    for (int i = 0; i < (int)N->out.n; i++) {
        for (int e = first[i]; e >= 0; e = next[e])
            su_vec_push(all, m->oom, N->early[e].op);
        if (N->out.v[i])
            su_vec_push(all, m->oom, N->out.v[i]);
    }
    su_vec_free(&m->ops);
    m->ops = *all;
    *all = (su_vec){0};
}

int pass_narrow(ir_module *m)
{
    if (!m->partitioned || m->stage >= 0)
        return 0;
    narrow N = {.m = m, .at = -1};
    bool done = su_guarded(m->oom, work, &N);
    su_vec_free(&N.out);
    su_vec_free(&N.all);
    if (!done)
        su_oom(m->oom);
    return N.changed;
}
